// A throw-away certificate authority: what `memaudit run` mints for the
// processes it starts, so the embedded cluster speaks the same mutual TLS as
// a deployed one. Keys are ECDSA P-256, certificates SHA-256-signed X.509 v3.
// Production deployments bring their own CA (docs/security.md).
#ifndef MEMAUDIT_COMMON_SECURITY_CERTIFICATE_AUTHORITY_H_
#define MEMAUDIT_COMMON_SECURITY_CERTIFICATE_AUTHORITY_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace memaudit {

// A certificate and its private key, PEM-encoded.
struct PemPair {
  std::string cert;
  std::string key;
};

// Who a certificate names: the subject's OU (the role, common/security/identity.h)
// and CN (the name), plus the host names and IP addresses it serves under.
struct CertificateSubject {
  std::string role;  // "team", "worker", "coordinator", "scorer", "admin"
  std::string name;
  std::vector<std::string> dns_names = {"localhost"};
  std::vector<std::string> ip_addresses = {"127.0.0.1", "::1"};
};

class CertificateAuthority {
 public:
  // A new self-signed CA valid for `days` days.
  static absl::StatusOr<std::unique_ptr<CertificateAuthority>> Create(const std::string& name,
                                                                      int days = 30);
  ~CertificateAuthority();
  CertificateAuthority(const CertificateAuthority&) = delete;
  CertificateAuthority& operator=(const CertificateAuthority&) = delete;

  // The CA's certificate: what every party trusts.
  const std::string& cert_pem() const { return cert_pem_; }

  // A certificate for `subject`, signed by this CA, usable by servers and
  // clients alike (extended key usage serverAuth and clientAuth).
  absl::StatusOr<PemPair> Issue(const CertificateSubject& subject, int days = 30) const;

 private:
  struct Keys;
  explicit CertificateAuthority(std::unique_ptr<Keys> keys, std::string cert_pem);

  std::unique_ptr<Keys> keys_;
  std::string cert_pem_;
};

// Writes `pem` as NAME.crt and NAME.key in `dir` (the key readable by its
// owner only); returns the two paths.
absl::StatusOr<std::pair<std::string, std::string>> WritePemPair(const std::string& dir,
                                                                 const std::string& name,
                                                                 const PemPair& pem);

}  // namespace memaudit

#endif  // MEMAUDIT_COMMON_SECURITY_CERTIFICATE_AUTHORITY_H_
