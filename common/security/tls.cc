#include "common/security/tls.h"

#include <spdlog/spdlog.h>

#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/base/bounded_file.h"
#include "common/base/status_macros.h"

namespace memaudit {
namespace {

absl::StatusOr<std::string> ReadPem(const std::string& flag, const std::string& path) {
  // A PEM file is small; a huge one is a wrong path (a dataset, /dev/zero).
  constexpr size_t kMaxPemBytes = 1 << 20;
  MEMAUDIT_ASSIGN_OR_RETURN(std::string text, ReadBoundedFile(flag, path, kMaxPemBytes));
  if (text.find("-----BEGIN ") == std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(flag, ": \"", path, "\" holds no PEM block"));
  }
  return text;
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

namespace {

// The PEM files `flags` name, each read once; empty where not named (and all
// empty under --insecure). The rules of CheckTlsFlags.
struct PemFiles {
  std::string ca, cert, key;
};

absl::StatusOr<PemFiles> ReadTlsFiles(const TlsFlags& flags, bool server) {
  PemFiles pems;
  if (flags.insecure) return pems;
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
  MEMAUDIT_ASSIGN_OR_RETURN(pems.ca, ReadPem("--tls-ca", flags.ca));
  if (!flags.cert.empty()) {
    MEMAUDIT_ASSIGN_OR_RETURN(pems.cert, ReadPem("--tls-cert", flags.cert));
    MEMAUDIT_ASSIGN_OR_RETURN(pems.key, ReadPem("--tls-key", flags.key));
  }
  return pems;
}

}  // namespace

absl::Status CheckTlsFlags(const TlsFlags& flags, bool server) {
  return ReadTlsFiles(flags, server).status();
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ServerCredentials(
    const TlsFlags& flags, bool require_client_cert) {
  MEMAUDIT_ASSIGN_OR_RETURN(PemFiles pems, ReadTlsFiles(flags, /*server=*/true));
  if (flags.insecure) {
    spdlog::warn("INSECURE: serving plain text with no authentication (--insecure)");
    return grpc::InsecureServerCredentials();
  }
  grpc::SslServerCredentialsOptions options(
      require_client_cert ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY
                          : GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY);
  options.pem_root_certs = std::move(pems.ca);
  options.pem_key_cert_pairs.push_back({std::move(pems.key), std::move(pems.cert)});
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
  constexpr size_t kMaxTokenBytes = 4096;
  MEMAUDIT_ASSIGN_OR_RETURN(std::string token,
                            ReadBoundedFile("--token-file", token_file, kMaxTokenBytes));
  token = std::string(absl::StripAsciiWhitespace(token));
  if (token.empty()) {
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
  MEMAUDIT_ASSIGN_OR_RETURN(PemFiles pems, ReadTlsFiles(flags, /*server=*/false));
  args.SetMaxSendMessageSize(kMaxGrpcMessageBytes);
  args.SetMaxReceiveMessageSize(kMaxGrpcMessageBytes);
  if (flags.insecure) {
    return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
  }
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = std::move(pems.ca);
  options.pem_cert_chain = std::move(pems.cert);
  options.pem_private_key = std::move(pems.key);
  std::shared_ptr<grpc::ChannelCredentials> channel_credentials = grpc::SslCredentials(options);
  if (!credentials.token.empty()) {
    // Sent only over TLS: gRPC refuses call credentials on plain text.
    channel_credentials = grpc::CompositeChannelCredentials(
        channel_credentials, grpc::AccessTokenCredentials(credentials.token));
  }
  return grpc::CreateCustomChannel(address, channel_credentials, args);
}

}  // namespace memaudit
