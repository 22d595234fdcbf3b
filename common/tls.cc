#include "common/tls.h"

#include <spdlog/spdlog.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/serving.h"

namespace memaudit {
namespace {

absl::StatusOr<std::string> ReadPem(const std::string& flag, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(absl::StrCat(flag, ": cannot read \"", path, "\""));
  std::ostringstream text;
  text << in.rdbuf();
  // A PEM file is small; a huge one is a wrong path (a dataset, /dev/zero).
  constexpr size_t kMaxPemBytes = 1 << 20;
  if (text.str().size() > kMaxPemBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, ": \"", path, "\" is over ", kMaxPemBytes, " bytes; not a PEM file"));
  }
  if (text.str().find("-----BEGIN ") == std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(flag, ": \"", path, "\" holds no PEM block"));
  }
  return text.str();
}

}  // namespace

void AddTlsFlags(CLI::App* app, TlsFlags* flags) {
  app->add_option("--tls-cert", flags->cert, "PEM certificate this process presents");
  app->add_option("--tls-key", flags->key, "PEM private key of --tls-cert");
  app->add_option("--tls-ca", flags->ca, "PEM CA certificate(s) that peers' certificates chain to");
  app->add_flag("--insecure", flags->insecure,
                "plain text and no authentication (one user on one machine, tests)");
}

void ApplyTlsEnvironment(TlsFlags* flags) {
  const auto fill = [](std::string* value, const char* variable) {
    if (const char* env = std::getenv(variable); value->empty() && env != nullptr) *value = env;
  };
  fill(&flags->cert, "MEMAUDIT_TLS_CERT");
  fill(&flags->key, "MEMAUDIT_TLS_KEY");
  fill(&flags->ca, "MEMAUDIT_TLS_CA");
  if (const char* env = std::getenv("MEMAUDIT_INSECURE"); env != nullptr && env[0] == '1') {
    flags->insecure = true;
  }
}

absl::Status CheckTlsFlags(const TlsFlags& flags, bool server) {
  if (flags.insecure) return absl::OkStatus();
  if (flags.ca.empty()) {
    return absl::InvalidArgumentError(
        "--tls-ca: required (or --insecure for plain text without authentication)");
  }
  if (server && (flags.cert.empty() || flags.key.empty())) {
    return absl::InvalidArgumentError(absl::StrCat(flags.cert.empty() ? "--tls-cert" : "--tls-key",
                                                   ": required to serve over TLS"));
  }
  if (flags.cert.empty() != flags.key.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(flags.cert.empty() ? "--tls-cert" : "--tls-key",
                                                   ": give --tls-cert and --tls-key together"));
  }
  for (const auto& [flag, path] : {std::pair<const char*, const std::string&>{"--tls-ca", flags.ca},
                                   {"--tls-cert", flags.cert},
                                   {"--tls-key", flags.key}}) {
    if (path.empty()) continue;
    if (auto pem = ReadPem(flag, path); !pem.ok()) return pem.status();
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ServerCredentials(const TlsFlags& flags) {
  if (absl::Status s = CheckTlsFlags(flags, /*server=*/true); !s.ok()) return s;
  if (flags.insecure) {
    spdlog::warn("INSECURE: serving plain text with no authentication (--insecure)");
    return grpc::InsecureServerCredentials();
  }
  grpc::SslServerCredentialsOptions options(GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY);
  auto ca = ReadPem("--tls-ca", flags.ca);
  auto cert = ReadPem("--tls-cert", flags.cert);
  auto key = ReadPem("--tls-key", flags.key);
  for (const auto* pem : {&ca, &cert, &key}) {
    if (!pem->ok()) return pem->status();
  }
  options.pem_root_certs = *ca;
  options.pem_key_cert_pairs.push_back({*key, *cert});
  return grpc::SslServerCredentials(options);
}

void AddClientCredentialFlags(CLI::App* app, ClientCredentials* credentials,
                              std::string* token_file) {
  AddTlsFlags(app, &credentials->tls);
  app->add_option("--token-file", *token_file,
                  "file holding this client's bearer token (instead of a client certificate)");
}

absl::Status LoadClientToken(const std::string& token_file, ClientCredentials* credentials) {
  if (token_file.empty()) return absl::OkStatus();
  std::ifstream in(token_file, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat("--token-file: cannot read \"", token_file, "\""));
  }
  constexpr size_t kMaxTokenBytes = 4096;
  std::string token(kMaxTokenBytes + 1, '\0');
  in.read(token.data(), static_cast<std::streamsize>(token.size()));
  token.resize(static_cast<size_t>(in.gcount()));
  token = std::string(absl::StripAsciiWhitespace(token));
  if (token.empty() || token.size() > kMaxTokenBytes) {
    return absl::InvalidArgumentError(absl::StrCat("--token-file: \"", token_file,
                                                   "\" must hold one token of 1 to ",
                                                   kMaxTokenBytes, " bytes"));
  }
  credentials->token = std::move(token);
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeChannel(const std::string& address,
                                                           const ClientCredentials& credentials,
                                                           grpc::ChannelArguments args) {
  const TlsFlags& flags = credentials.tls;
  if (absl::Status s = CheckTlsFlags(flags, /*server=*/false); !s.ok()) return s;
  args.SetMaxSendMessageSize(kMaxGrpcMessageBytes);
  args.SetMaxReceiveMessageSize(kMaxGrpcMessageBytes);
  if (flags.insecure) {
    return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
  }
  grpc::SslCredentialsOptions options;
  auto ca = ReadPem("--tls-ca", flags.ca);
  if (!ca.ok()) return ca.status();
  options.pem_root_certs = *ca;
  if (!flags.cert.empty()) {
    auto cert = ReadPem("--tls-cert", flags.cert);
    if (!cert.ok()) return cert.status();
    auto key = ReadPem("--tls-key", flags.key);
    if (!key.ok()) return key.status();
    options.pem_cert_chain = *cert;
    options.pem_private_key = *key;
  }
  std::shared_ptr<grpc::ChannelCredentials> channel_credentials = grpc::SslCredentials(options);
  if (!credentials.token.empty()) {
    // Sent only over TLS: gRPC refuses call credentials on plain text.
    channel_credentials = grpc::CompositeChannelCredentials(
        channel_credentials, grpc::AccessTokenCredentials(credentials.token));
  }
  return grpc::CreateCustomChannel(address, channel_credentials, args);
}

}  // namespace memaudit
