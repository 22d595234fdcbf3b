#include "audits/membership/spec_packing.h"

#include <algorithm>
#include <cmath>

#include "spec/dataset_rules.h"
#include "spec/spec_rules.h"

namespace memaudit::spec {

uint32_t AutoModelsPerTask(const v1::AuditSpec& spec) {
  const v1::MembershipAudit& m = spec.membership();
  const uint32_t models = std::clamp<uint32_t>(m.reference_models(), 1, kAutoPackMembers);
  // Language models train one after another: nothing to pack.
  if (m.has_documents()) return 1;
  // Only logreg and MLPs train as one batched ensemble; other models of a
  // task train one after another, which packing cannot speed up.
  const std::string& arch = m.model().architecture();
  if (arch != engine::ModelKindName(engine::ModelKind::kMlp) &&
      arch != engine::ModelKindName(engine::ModelKind::kLogReg)) {
    return 1;
  }
  // On a GPU one small model leaves the device idle and an ensemble fills
  // it (docs/performance.md, "ensemble" on CUDA): always worth packing.
  if (spec.resources().gpus_per_task() > 0) return models;
  const double threads = std::max<uint32_t>(1, spec.resources().threads_per_task());
  const double batch = std::max<uint32_t>(1, m.training().batch_size());
  const double parameters = std::max(1.0, ClassifierParameters(m.model(), m.dataset()));
  if (batch * parameters > threads * kAutoPackMaxStepMacs) return 1;
  const double by_rows = std::floor(threads * kAutoPackMaxRows / batch);
  const double by_state = std::floor(threads * kAutoPackMaxStateBytes / (12 * parameters));
  return static_cast<uint32_t>(std::clamp<double>(std::min(by_rows, by_state), 1, models));
}

}  // namespace memaudit::spec
