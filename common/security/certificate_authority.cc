#include "common/security/certificate_authority.h"

#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>

#include <fstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace memaudit {
namespace {

// OpenSSL's objects, freed on every path.
struct PkeyFree {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
struct X509Free {
  void operator()(X509* p) const { X509_free(p); }
};
struct BioFree {
  void operator()(BIO* p) const { BIO_free(p); }
};
using Pkey = std::unique_ptr<EVP_PKEY, PkeyFree>;
using Cert = std::unique_ptr<X509, X509Free>;
using Bio = std::unique_ptr<BIO, BioFree>;

// The first error on OpenSSL's queue, with what we were doing.
absl::Status OpenSslError(absl::string_view doing) {
  const unsigned long code = ERR_get_error();
  char text[256] = {0};
  if (code != 0) ERR_error_string_n(code, text, sizeof(text));
  ERR_clear_error();
  return absl::InternalError(absl::StrCat("openssl: ", doing, ": ", text));
}

absl::StatusOr<Pkey> NewKey() {
  Pkey key(EVP_EC_gen("P-256"));
  if (key == nullptr) return OpenSslError("generating a P-256 key");
  return key;
}

absl::StatusOr<std::string> ReadBio(BIO* bio) {
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio, &data);
  if (size < 0) return OpenSslError("reading PEM");
  return std::string(data, static_cast<size_t>(size));
}

absl::StatusOr<std::string> CertPem(X509* cert) {
  Bio bio(BIO_new(BIO_s_mem()));
  if (bio == nullptr || PEM_write_bio_X509(bio.get(), cert) != 1) {
    return OpenSslError("writing a certificate");
  }
  return ReadBio(bio.get());
}

absl::StatusOr<std::string> KeyPem(EVP_PKEY* key) {
  Bio bio(BIO_new(BIO_s_mem()));
  if (bio == nullptr ||
      PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    return OpenSslError("writing a private key");
  }
  return ReadBio(bio.get());
}

absl::Status AddExtension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  if (ext == nullptr) return OpenSslError(absl::StrCat("extension ", OBJ_nid2sn(nid)));
  const int added = X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
  if (added != 1) return OpenSslError(absl::StrCat("adding extension ", OBJ_nid2sn(nid)));
  return absl::OkStatus();
}

// A certificate for `key` named `subject`, valid from a minute ago (clock
// skew between processes) for `days`; issuer and signature are set later.
absl::StatusOr<Cert> NewCert(EVP_PKEY* key,
                             const std::vector<std::pair<const char*, std::string>>& subject,
                             int days) {
  Cert cert(X509_new());
  if (cert == nullptr || X509_set_version(cert.get(), 2) != 1) return OpenSslError("X509_new");
  // A random 128-bit serial: unique without bookkeeping.
  BIGNUM* serial = BN_new();
  const bool serial_ok = serial != nullptr && BN_rand(serial, 127, BN_RAND_TOP_ANY, 0) == 1 &&
                         BN_to_ASN1_INTEGER(serial, X509_get_serialNumber(cert.get())) != nullptr;
  BN_free(serial);
  if (!serial_ok) return OpenSslError("serial number");
  if (X509_gmtime_adj(X509_getm_notBefore(cert.get()), -60) == nullptr ||
      X509_gmtime_adj(X509_getm_notAfter(cert.get()), int64_t{days} * 86400) == nullptr ||
      X509_set_pubkey(cert.get(), key) != 1) {
    return OpenSslError("validity and key");
  }
  X509_NAME* name = X509_get_subject_name(cert.get());
  for (const auto& [field, value] : subject) {
    if (X509_NAME_add_entry_by_txt(name, field, MBSTRING_UTF8,
                                   reinterpret_cast<const unsigned char*>(value.c_str()), -1, -1,
                                   0) != 1) {
      return OpenSslError(absl::StrCat("subject ", field));
    }
  }
  return cert;
}

}  // namespace

struct CertificateAuthority::Keys {
  Pkey key;
  Cert cert;
};

CertificateAuthority::CertificateAuthority(std::unique_ptr<Keys> keys, std::string cert_pem)
    : keys_(std::move(keys)), cert_pem_(std::move(cert_pem)) {}

CertificateAuthority::~CertificateAuthority() = default;

absl::StatusOr<std::unique_ptr<CertificateAuthority>> CertificateAuthority::Create(
    const std::string& name, int days) {
  auto keys = std::make_unique<Keys>();
  auto key = NewKey();
  if (!key.ok()) return key.status();
  keys->key = std::move(*key);
  auto cert = NewCert(keys->key.get(), {{"O", "memaudit"}, {"CN", name}}, days);
  if (!cert.ok()) return cert.status();
  keys->cert = std::move(*cert);
  X509* x = keys->cert.get();
  if (X509_set_issuer_name(x, X509_get_subject_name(x)) != 1) return OpenSslError("issuer");
  for (const auto& [nid, value] :
       std::vector<std::pair<int, std::string>>{{NID_basic_constraints, "critical,CA:TRUE"},
                                                {NID_key_usage, "critical,keyCertSign,cRLSign"},
                                                {NID_subject_key_identifier, "hash"}}) {
    if (absl::Status s = AddExtension(x, x, nid, value); !s.ok()) return s;
  }
  if (X509_sign(x, keys->key.get(), EVP_sha256()) == 0) return OpenSslError("signing the CA");
  auto pem = CertPem(x);
  if (!pem.ok()) return pem.status();
  return std::unique_ptr<CertificateAuthority>(
      new CertificateAuthority(std::move(keys), std::move(*pem)));
}

absl::StatusOr<PemPair> CertificateAuthority::Issue(const CertificateSubject& subject,
                                                    int days) const {
  auto key = NewKey();
  if (!key.ok()) return key.status();
  auto cert = NewCert(key->get(), {{"OU", subject.role}, {"CN", subject.name}}, days);
  if (!cert.ok()) return cert.status();
  X509* x = cert->get();
  if (X509_set_issuer_name(x, X509_get_subject_name(keys_->cert.get())) != 1) {
    return OpenSslError("issuer");
  }
  std::vector<std::string> names;
  for (const std::string& dns : subject.dns_names) names.push_back(absl::StrCat("DNS:", dns));
  for (const std::string& ip : subject.ip_addresses) names.push_back(absl::StrCat("IP:", ip));
  std::vector<std::pair<int, std::string>> extensions = {
      {NID_basic_constraints, "critical,CA:FALSE"},
      {NID_key_usage, "critical,digitalSignature,keyAgreement"},
      {NID_ext_key_usage, "serverAuth,clientAuth"},
      {NID_authority_key_identifier, "keyid"}};
  if (!names.empty()) extensions.push_back({NID_subject_alt_name, absl::StrJoin(names, ",")});
  for (const auto& [nid, value] : extensions) {
    if (absl::Status s = AddExtension(x, keys_->cert.get(), nid, value); !s.ok()) return s;
  }
  if (X509_sign(x, keys_->key.get(), EVP_sha256()) == 0) return OpenSslError("signing");
  PemPair pair;
  auto cert_pem = CertPem(x);
  if (!cert_pem.ok()) return cert_pem.status();
  pair.cert = std::move(*cert_pem);
  auto key_pem = KeyPem(key->get());
  if (!key_pem.ok()) return key_pem.status();
  pair.key = std::move(*key_pem);
  return pair;
}

absl::StatusOr<std::pair<std::string, std::string>> WritePemPair(const std::string& dir,
                                                                 const std::string& name,
                                                                 const PemPair& pem) {
  const std::string cert_path = absl::StrCat(dir, "/", name, ".crt");
  const std::string key_path = absl::StrCat(dir, "/", name, ".key");
  for (const auto& [path, text, mode] :
       {std::make_tuple(cert_path, &pem.cert, 0644), std::make_tuple(key_path, &pem.key, 0600)}) {
    {
      std::ofstream out(path, std::ios::binary | std::ios::trunc);
      out << *text;
      if (!out.good()) return absl::UnavailableError(absl::StrCat("cannot write ", path));
    }
    if (chmod(path.c_str(), static_cast<mode_t>(mode)) != 0) {
      return absl::UnavailableError(absl::StrCat("cannot chmod ", path));
    }
  }
  return std::make_pair(cert_path, key_path);
}

}  // namespace memaudit
