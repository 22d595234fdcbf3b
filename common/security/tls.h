// Transport security for every gRPC port and every client: TLS with the
// caller's certificate (mutual TLS between the services), or plain text when
// --insecure asks for it. One set of flags for servers, workers and the CLI.
#ifndef MEMAUDIT_COMMON_SECURITY_TLS_H_
#define MEMAUDIT_COMMON_SECURITY_TLS_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"

namespace memaudit {

struct TlsFlags {
  std::string cert;  // PEM certificate (chain) this process presents
  std::string key;   // its private key
  std::string ca;    // PEM CA certificate(s) a peer's certificate must chain to
  bool insecure = false;
};

// Adds --tls-cert, --tls-key, --tls-ca and --insecure.
void AddTlsFlags(CLI::App* app, TlsFlags* flags);

// The CLI's defaults: MEMAUDIT_TLS_CERT, MEMAUDIT_TLS_KEY, MEMAUDIT_TLS_CA,
// MEMAUDIT_INSECURE=1 fill what the flags leave empty.
void ApplyTlsEnvironment(TlsFlags* flags);

// INVALID_ARGUMENT naming the flag when TLS is on and a file is missing or
// unreadable. A server needs --tls-cert, --tls-key and --tls-ca (it verifies
// client certificates against the CA); a client needs --tls-ca, and
// --tls-cert with --tls-key when it authenticates by certificate.
absl::Status CheckTlsFlags(const TlsFlags& flags, bool server);

// Server credentials: TLS that asks for a client certificate and, when one
// is presented, verifies it against the CA (callers may instead present a
// bearer token, common/security/identity.h), or with `require_client_cert` refuses
// the handshake of a client without one. --insecure: plain text, logged.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ServerCredentials(
    const TlsFlags& flags, bool require_client_cert = false);

// Largest gRPC message a server sends, and every client of the services
// receives (observation batches, audits with results): one value, so what a
// server sends, its callers can read (common/rpc/serving.h). The scorer receives messages this
// large (Ingest); the coordinator only small ones (kSmallReceiveBytes).
inline constexpr int kMaxGrpcMessageBytes = 256 << 20;

// What a client presents: TLS settings and, instead of or besides a client
// certificate, a bearer token.
struct ClientCredentials {
  TlsFlags tls;
  std::string token;
};

// Adds the TLS flags and --token-file (a file holding the bearer token; read
// by LoadClientCredentials).
void AddClientCredentialFlags(CLI::App* app, ClientCredentials* credentials,
                              std::string* token_file);

// Reads `token_file` into `credentials->token` (surrounding whitespace
// dropped); INVALID_ARGUMENT naming --token-file if unreadable or empty.
absl::Status LoadClientToken(const std::string& token_file, ClientCredentials* credentials);

// A channel to `address` with `credentials`, the services' message size
// limit on top of `args`, and the bearer token (if any) on every call.
absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeChannel(
    const std::string& address, const ClientCredentials& credentials,
    grpc::ChannelArguments args = grpc::ChannelArguments());

}  // namespace memaudit

#endif  // MEMAUDIT_COMMON_SECURITY_TLS_H_
