// Fuzzes the scorer past validation: each input becomes every observation of
// a small membership audit (4 models, 16 pool and 8 population examples, every
// attack), so the audit is complete and scored end to end — Gaussian fits,
// RMIA ratios, ROC curves, operating points, the vulnerability ranking — on
// values a forger chooses. Any value within Ingest's bounds may arrive, so the
// scoring must survive them all (±1e6, denormals, ties, outliers) and answer
// with results or an error status, never a crash.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "audits/membership/attacks.h"
#include "audits/membership/scorer_metrics.h"
#include "google/protobuf/stubs/logging.h"
#include "prometheus/registry.h"
#include "services/scorer/scorer.h"
#include "services/scorer/scorer_store.h"
#include "spec/spec_validator.h"

namespace {

using memaudit::scorer::Scorer;
using memaudit::scorer::ScorerStore;
namespace v1 = memaudit::v1;

constexpr uint32_t kModels = 6;  // per-example-variance LiRA needs 6
constexpr uint32_t kPool = 16;
constexpr uint32_t kPopulation = 8;

v1::AuditSpec Spec() {
  v1::AuditSpec spec;
  spec.set_name("scoring-fuzzer");
  spec.set_seed(1);
  v1::MembershipAudit* m = spec.mutable_membership();
  m->mutable_dataset()->set_pool_size(kPool);
  m->set_reference_models(kModels);
  m->set_population_size(kPopulation);
  m->mutable_training()->set_learning_rate(0.1);
  m->mutable_training()->set_epochs(1);
  // Every attack a dataset can name (the text attacks score documents only).
  for (const memaudit::membership::Attack& a : memaudit::membership::Attacks()) {
    if (!a.needs_documents) m->add_attacks(memaudit::membership::AttackName(a.id));
  }
  m->add_fpr_points(0.001);
  m->add_fpr_points(0.1);
  memaudit::spec::ApplyDefaults(&spec);
  if (const absl::Status s = memaudit::spec::ValidateSpec(spec); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    std::abort();
  }
  return spec;
}

// The input as doubles, 8 bytes each, cycled, folded into the range Ingest
// accepts (what it refuses is observation_fuzzer's part): a non-finite one
// becomes its bits' integer value, then the remainder by the bound; a loss
// is its magnitude.
class Values {
 public:
  Values(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  double Next(bool loss) {
    const double v = std::fmod(Raw(), memaudit::scorer::kMaxSignalMagnitude);
    return loss ? std::fabs(v) : v;
  }

 private:
  double Raw() {
    uint64_t bits = 0;
    for (size_t b = 0; b < sizeof(bits); ++b) {
      bits = bits << 8 | data_[(offset_ + b) % size_];
    }
    offset_ = (offset_ + sizeof(bits)) % size_;
    double v = 0;
    std::memcpy(&v, &bits, sizeof(v));
    return std::isfinite(v) ? v : static_cast<double>(bits >> 11);
  }

  const uint8_t* data_;
  size_t size_;
  size_t offset_ = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const v1::AuditSpec spec = [] {
    // The store's and protobuf's complaints about the values are noise here.
    google::protobuf::SetLogHandler(nullptr);
    return Spec();
  }();
  if (size < 8) return 0;
  // A fresh in-memory store per input: nothing carries over between inputs.
  auto store = ScorerStore::Open(":memory:");
  if (!store.ok()) std::abort();
  prometheus::Registry registry;
  auto scorer = Scorer::Create(store->get(), &registry);
  if (!scorer.ok() || !(*scorer)->OpenAudit("a", spec).ok()) std::abort();
  Values values(data, size);
  for (uint32_t run = 0; run < kModels; ++run) {
    for (const char* signal : {memaudit::scorer::kPhiSignal, memaudit::scorer::kLossSignal,
                               memaudit::scorer::kPopulationLossSignal}) {
      v1::Observation o;
      o.set_audit_id("a");
      o.set_run(run);
      o.set_point("final");
      o.set_signal(signal);
      const bool population = std::strcmp(signal, memaudit::scorer::kPopulationLossSignal) == 0;
      const bool loss = std::strcmp(signal, memaudit::scorer::kPhiSignal) != 0;
      for (uint32_t j = 0; j < (population ? kPopulation : kPool); ++j) {
        o.add_values(values.Next(loss));
      }
      (*scorer)->Ingest(o).IgnoreError();
    }
  }
  (*scorer)->ScoreIfComplete("a").IgnoreError();
  return 0;
}
