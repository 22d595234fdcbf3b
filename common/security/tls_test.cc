// TLS and caller identities over real gRPC on loopback: certificates minted by
// CertificateAuthority and by Debian's openssl command, bearer tokens from a
// token file, and the failures a stranger meets.
#include "common/security/tls.h"

#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/rpc/status_grpc.h"
#include "common/security/certificate_authority.h"
#include "common/security/identity.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "memaudit/v1/audit.grpc.pb.h"

namespace memaudit {
namespace {

using ::memaudit::testing::StatusIs;
using ::testing::HasSubstr;

// Answers Get with the caller's identity as the audit's name.
class WhoAmI final : public v1::AuditService::Service {
 public:
  explicit WhoAmI(Authenticator* auth) : auth_(auth) {}
  grpc::Status Get(grpc::ServerContext* context, const v1::GetRequest*, v1::Audit* out) override {
    auto who = auth_->Require(*context, {Role::kTeam, Role::kWorker});
    if (!who.ok()) return ToGrpc(who.status());
    out->set_name(who->ToString());
    return grpc::Status::OK;
  }

 private:
  Authenticator* auth_;
};

class TlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/tls_test_" + std::to_string(getpid());
    std::filesystem::create_directories(dir_);
    auto ca = CertificateAuthority::Create("test CA");
    MEMAUDIT_ASSERT_OK(ca);
    ca_ = std::move(*ca);
    ca_path_ = Write("ca.crt", ca_->cert_pem());
    server_ = Issue("coordinator", "memaudit-coordinator");
    token_file_ = Write(
        "tokens", absl::StrCat("# team tokens\n", TokenHash("alpha-secret"), " team alpha\n"));
    auto auth = Authenticator::Create(token_file_);
    MEMAUDIT_ASSERT_OK(auth);
    auth_ = std::move(*auth);
    service_ = std::make_unique<WhoAmI>(auth_.get());
    Serve(ca_path_);
  }
  void TearDown() override {
    if (server_instance_ != nullptr) server_instance_->Shutdown();
    std::filesystem::remove_all(dir_);
  }

  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }
  TlsFlags Issue(const std::string& role, const std::string& name) {
    auto pem = ca_->Issue({role, name});
    EXPECT_TRUE(pem.ok()) << pem.status();
    auto paths = WritePemPair(dir_, absl::StrCat(role, "-", name), *pem);
    EXPECT_TRUE(paths.ok()) << paths.status();
    return TlsFlags{paths->first, paths->second, ca_path_, false};
  }
  void Serve(const std::string& ca_path) {
    TlsFlags flags = server_;
    flags.ca = ca_path;
    auto credentials = ServerCredentials(flags);
    ASSERT_TRUE(credentials.ok()) << credentials.status();
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", *credentials, &port_);
    builder.RegisterService(service_.get());
    server_instance_ = builder.BuildAndStart();
    ASSERT_NE(server_instance_, nullptr);
  }
  // Get as a client with `flags` and `token`: the identity, or the error.
  absl::StatusOr<std::string> Call(const TlsFlags& flags, const std::string& token = "") {
    // An address literal: resolving "localhost" goes through c-ares, whose
    // allocations LeakSanitizer reports (scripts/sanitize.sh).
    auto channel = MakeChannel(absl::StrCat("127.0.0.1:", port_), ClientCredentials{flags, token});
    if (!channel.ok()) return channel.status();
    auto stub = v1::AuditService::NewStub(*channel);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    v1::Audit audit;
    const grpc::Status status = stub->Get(&context, v1::GetRequest(), &audit);
    if (!status.ok()) return FromGrpc(status);
    return audit.name();
  }

  std::string dir_, ca_path_, token_file_;
  std::unique_ptr<CertificateAuthority> ca_;
  TlsFlags server_;
  std::unique_ptr<Authenticator> auth_;
  std::unique_ptr<WhoAmI> service_;
  std::unique_ptr<grpc::Server> server_instance_;
  int port_ = 0;
};

TEST_F(TlsTest, ClientCertificateNamesRoleAndName) {
  EXPECT_THAT(Call(Issue("worker", "w1")), memaudit::testing::IsOkAndHolds("worker w1"));
  EXPECT_THAT(Call(Issue("team", "beta")), memaudit::testing::IsOkAndHolds("team beta"));
}

TEST_F(TlsTest, BearerTokenNamesTheTeam) {
  TlsFlags ca_only{"", "", ca_path_, false};
  EXPECT_THAT(Call(ca_only, "alpha-secret"), memaudit::testing::IsOkAndHolds("team alpha"));
  EXPECT_THAT(Call(ca_only, "guessed"),
              StatusIs(absl::StatusCode::kUnauthenticated, HasSubstr("unknown token")));
}

TEST_F(TlsTest, NoCredentialsIsUnauthenticated) {
  TlsFlags ca_only{"", "", ca_path_, false};
  EXPECT_THAT(Call(ca_only), StatusIs(absl::StatusCode::kUnauthenticated));
}

TEST_F(TlsTest, WrongRoleIsPermissionDenied) {
  EXPECT_THAT(Call(Issue("coordinator", "c")),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("coordinator c")));
  EXPECT_THAT(Call(Issue("admin", "ops")), memaudit::testing::IsOkAndHolds("admin ops"));
}

TEST_F(TlsTest, ClientTrustingAnotherCaFailsTheHandshake) {
  auto other = CertificateAuthority::Create("other CA");
  MEMAUDIT_ASSERT_OK(other);
  TlsFlags flags{"", "", Write("other.crt", (*other)->cert_pem()), false};
  EXPECT_THAT(Call(flags, "alpha-secret"), StatusIs(absl::StatusCode::kUnavailable));
}

TEST_F(TlsTest, CertificateFromAnotherCaIsRefused) {
  auto other = CertificateAuthority::Create("other CA");
  MEMAUDIT_ASSERT_OK(other);
  auto pem = (*other)->Issue({"admin", "intruder"});
  MEMAUDIT_ASSERT_OK(pem);
  auto paths = WritePemPair(dir_, "intruder", *pem);
  MEMAUDIT_ASSERT_OK(paths);
  EXPECT_THAT(Call(TlsFlags{paths->first, paths->second, ca_path_, false}),
              StatusIs(absl::StatusCode::kUnavailable));
}

TEST_F(TlsTest, PlainTextClientCannotTalkToATlsServer) {
  EXPECT_THAT(Call(TlsFlags{"", "", "", true}), StatusIs(absl::StatusCode::kUnavailable));
}

// Certificates made by Debian's openssl, as an operator would (docs/security.md).
TEST_F(TlsTest, OpensslMadeCertificatesWork) {
  const std::string script = absl::StrCat(
      "set -e; cd ", dir_,
      "; openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2"
      " -subj '/CN=ops CA' -keyout oca.key -out oca.crt 2>/dev/null"
      "; openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes"
      " -subj '/OU=team/CN=gamma' -keyout gamma.key -out gamma.csr 2>/dev/null"
      "; printf "
      "'subjectAltName=DNS:localhost,IP:127.0.0.1\\nextendedKeyUsage=clientAuth,serverAuth\\n' > "
      "ext"
      "; openssl x509 -req -in gamma.csr -CA oca.crt -CAkey oca.key -CAcreateserial -days 2"
      " -extfile ext -out gamma.crt 2>/dev/null"
      "; cat oca.crt ca.crt > both.crt");
  ASSERT_EQ(std::system(script.c_str()), 0);
  // The server trusts both CAs; the client presents openssl's certificate.
  server_instance_->Shutdown();
  Serve(dir_ + "/both.crt");
  EXPECT_THAT(Call(TlsFlags{dir_ + "/gamma.crt", dir_ + "/gamma.key", ca_path_, false}),
              memaudit::testing::IsOkAndHolds("team gamma"));
}

TEST_F(TlsTest, SighupReloadsTheTokenFile) {
  TlsFlags ca_only{"", "", ca_path_, false};
  Authenticator::ReloadOnSighup();
  Write("tokens", absl::StrCat(TokenHash("delta-secret"), " team delta\n"));
  // Not yet reloaded: the old token still works.
  EXPECT_THAT(Call(ca_only, "alpha-secret"), memaudit::testing::IsOkAndHolds("team alpha"));
  ASSERT_EQ(std::raise(SIGHUP), 0);
  EXPECT_THAT(Call(ca_only, "delta-secret"), memaudit::testing::IsOkAndHolds("team delta"));
  EXPECT_THAT(Call(ca_only, "alpha-secret"), StatusIs(absl::StatusCode::kUnauthenticated));
}

TEST(TokenFileTest, MalformedLinesAreNamed) {
  const std::string hash = TokenHash("t");
  EXPECT_THAT(ParseTokenFile("abc team x\n"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("line 1: the first field")));
  EXPECT_THAT(ParseTokenFile(absl::StrCat("# c\n\n", hash, " boss x\n")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("line 3: role")));
  EXPECT_THAT(ParseTokenFile(absl::StrCat(hash, " team a/b\n")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("line 1: name")));
  EXPECT_THAT(ParseTokenFile(absl::StrCat(hash, " team a\n", hash, " team b\n")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("line 2: the same token")));
  auto ok = ParseTokenFile(absl::StrCat(hash, " worker w-1\n"));
  MEMAUDIT_ASSERT_OK(ok);
  EXPECT_EQ(ok->at(hash).ToString(), "worker w-1");
}

TEST(TokenHashTest, IsSha256Hex) {
  // printf abc | sha256sum
  EXPECT_EQ(TokenHash("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(TlsFlagsTest, MissingFilesAreNamed) {
  EXPECT_THAT(CheckTlsFlags(TlsFlags{}, /*server=*/false),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--tls-ca: required")));
  EXPECT_THAT(CheckTlsFlags(TlsFlags{"", "", "/nonexistent.crt", false}, false),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--tls-ca: cannot read")));
  EXPECT_THAT(CheckTlsFlags(TlsFlags{"", "", "/etc/hostname", false}, true),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--tls-cert: required")));
  MEMAUDIT_EXPECT_OK(CheckTlsFlags(TlsFlags{"", "", "", true}, true));
}

}  // namespace
}  // namespace memaudit
