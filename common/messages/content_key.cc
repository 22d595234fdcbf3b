#include "common/messages/content_key.h"

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/base/version.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"

namespace memaudit {
namespace {

// Map-free messages serialize deterministically; the flag makes it explicit.
std::string DeterministicBytes(const google::protobuf::Message& message) {
  std::string bytes;
  google::protobuf::io::StringOutputStream stream(&bytes);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.SetSerializationDeterministic(true);
  message.SerializeToCodedStream(&coded);
  coded.Trim();
  return bytes;
}

}  // namespace

std::string MembershipModelKey(const v1::AuditSpec& spec, uint32_t index) {
  v1::AuditSpec decisive;
  decisive.set_seed(spec.seed());
  decisive.mutable_resources()->set_threads_per_task(spec.resources().threads_per_task());
  // A model trained on a GPU differs from one trained on the CPU.
  decisive.mutable_resources()->set_gpus_per_task(spec.resources().gpus_per_task());
  // Portable and native kernels round differently.
  decisive.mutable_resources()->set_numerics(spec.resources().numerics());
  const v1::MembershipAudit& m = spec.membership();
  v1::MembershipAudit* d = decisive.mutable_membership();
  *d->mutable_dataset() = m.dataset();
  // The data are its content hash and source fields; the name only labels it.
  d->mutable_dataset()->clear_name();
  *d->mutable_model() = m.model();
  *d->mutable_training() = m.training();
  d->set_population_size(m.population_size());
  // Set only with documents, so a dataset audit's keys stay as they were.
  if (m.has_documents()) *d->mutable_documents() = m.documents();
  return absl::StrCat("membership/", index, "/",
                      absl::BytesToHexString(DeterministicBytes(decisive)), "/", CodeVersion());
}

}  // namespace memaudit
