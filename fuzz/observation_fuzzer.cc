// Fuzzes the scorer's handling of untrusted observations (what a worker, or
// anyone who can reach the scorer, sends): the first byte picks an audit of
// each kind (in spec.proto's oneof order) opened from examples/, the rest is a serialized
// v1::Observation that is validated, stored when valid, and scored when the audit is complete.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/messages/audit_kinds.h"
#include "common/messages/spec_yaml.h"
#include "google/protobuf/stubs/logging.h"
#include "prometheus/registry.h"
#include "services/scorer/scorer.h"
#include "services/scorer/scorer_store.h"
#include "spec/spec_validator.h"

namespace {

using memaudit::scorer::Scorer;
using memaudit::scorer::ScorerStore;

// One small example audit per kind, by the kind's name. The first input byte
// picks a kind by its place in spec.proto's oneof (AllAuditKinds), so the
// corpus's kind bytes follow the descriptor; a kind without an example here
// stops the fuzzer at start-up rather than being left out.
const std::map<std::string, std::string>& ExampleOfKind() {
  static const auto* examples = new std::map<std::string, std::string>{
      {"membership", "quickstart"},        {"exposure", "secret-sharer"},
      {"forgetting", "forgetting-inject"}, {"unlearning", "unlearning-scratch"},
      {"relational", "relational"},        {"dp_audit", "dp-audit-input"},
  };
  return *examples;
}

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
  for (memaudit::AuditKind kind : memaudit::AllAuditKinds()) {
    const std::string name = memaudit::AuditKindName(kind);
    auto example = ExampleOfKind().find(name);
    if (example == ExampleOfKind().end()) {
      std::fprintf(stderr, "observation_fuzzer: no example audit for kind %s\n", name.c_str());
      std::abort();
    }
    auto spec = memaudit::LoadSpecFile(std::string(MEMAUDIT_SOURCE_DIR "/examples/") +
                                       example->second + ".yaml");
    if (!spec.ok() || spec->kind_case() != kind) std::abort();
    memaudit::spec::ApplyDefaults(&*spec);
    if (!f->scorer->OpenAudit(name, *spec).ok()) std::abort();
  }
  return f;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Fixture* fixture = Init();
  if (size == 0) return 0;
  const auto& kinds = memaudit::AllAuditKinds();
  const std::string audit_id = memaudit::AuditKindName(kinds[data[0] % kinds.size()]);
  memaudit::v1::Observation o;
  if (!o.ParseFromArray(data + 1, static_cast<int>(size - 1))) return 0;
  o.set_audit_id(audit_id);
  auto stored = fixture->scorer->Ingest(o);
  if (stored.ok() && *stored) {
    fixture->scorer->ScoreIfComplete(audit_id).IgnoreError();
  }
  return 0;
}
