// Fuzzes the scorer's handling of untrusted observations (what a worker, or
// anyone who can reach the scorer, sends): the first byte picks an audit of
// each kind opened from examples/, the rest is a serialized v1::Observation
// that is validated, stored when valid, and scored when the audit is complete.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "common/spec_yaml.h"
#include "google/protobuf/stubs/logging.h"
#include "prometheus/registry.h"
#include "services/scorer/scorer.h"
#include "services/scorer/scorer_store.h"
#include "spec/spec_validator.h"

namespace {

using memaudit::scorer::Scorer;
using memaudit::scorer::ScorerStore;

// One small example audit per kind (membership, exposure, forgetting,
// unlearning, relational).
constexpr const char* kExamples[] = {"quickstart", "secret-sharer", "forgetting-inject",
                                     "unlearning-scratch", "relational"};
constexpr size_t kKinds = sizeof(kExamples) / sizeof(kExamples[0]);

struct Fixture {
  std::unique_ptr<ScorerStore> store;
  prometheus::Registry registry;
  std::unique_ptr<Scorer> scorer;
};

Fixture* Init() {
  // Malformed input is the point: protobuf's complaints about it are noise.
  google::protobuf::SetLogHandler(nullptr);
  auto* f = new Fixture;
  const std::string db = "/tmp/memaudit-observation-fuzzer-" + std::to_string(getpid()) + ".db";
  std::remove(db.c_str());
  f->store = *ScorerStore::Open(db);
  f->scorer = *Scorer::Create(f->store.get(), &f->registry);
  for (size_t k = 0; k < kKinds; ++k) {
    auto spec = memaudit::LoadSpecFile(std::string(MEMAUDIT_SOURCE_DIR "/examples/") +
                                       kExamples[k] + ".yaml");
    if (!spec.ok()) std::abort();
    memaudit::spec::ApplyDefaults(&*spec);
    if (!f->scorer->OpenAudit(kExamples[k], *spec).ok()) std::abort();
  }
  return f;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Fixture* fixture = Init();
  if (size == 0) return 0;
  const char* audit_id = kExamples[data[0] % kKinds];
  memaudit::v1::Observation o;
  if (!o.ParseFromArray(data + 1, static_cast<int>(size - 1))) return 0;
  o.set_audit_id(audit_id);
  auto stored = fixture->scorer->Ingest(o);
  if (stored.ok() && *stored) {
    fixture->scorer->ScoreIfComplete(audit_id).IgnoreError();
  }
  return 0;
}
