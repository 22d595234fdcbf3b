// What the coordinator does differently for each audit kind. Each kind
// implements KindHandler in its folder (audits/<kind>/spec.cc) and binds it to its kind there
// (HandlerOfKind, common/messages/kind_table.h); HandlerFor is the one dispatch on the kind.
#ifndef MEMAUDIT_SPEC_KIND_HANDLER_H_
#define MEMAUDIT_SPEC_KIND_HANDLER_H_

#include <vector>

#include "common/messages/audit_kinds.h"
#include "common/messages/kind_table.h"
#include "memaudit/v1/spec.pb.h"
#include "spec/gates.h"
#include "spec/planner.h"
#include "spec/spec_validator.h"

namespace memaudit::spec {

class KindHandler {
 public:
  virtual ~KindHandler() = default;

  // Reads what the spec's files hold into the spec (a dataset's facts and
  // content hash, a target model's hash) before defaults are applied: only
  // Submit and the CLI call it, after every path passed the data roots.
  // One problem per file that cannot be used.
  virtual void ReadFiles(v1::AuditSpec* /*spec*/, std::vector<SpecProblem>* /*problems*/) const {}

  // Fills the kind's unset fields with their documented defaults.
  virtual void ApplyDefaults(v1::AuditSpec* spec) const = 0;

  // Adds one problem per bad field of the kind's message, named from the
  // spec's root ("membership.reference_models").
  virtual void Validate(const v1::AuditSpec& spec, std::vector<SpecProblem>* problems) const = 0;

  // The tasks that train the audit's models, in the order they should run.
  // `spec` is valid. A pure function of the spec.
  virtual std::vector<PlannedTask> Plan(const v1::AuditSpec& spec) const = 0;

  // Whether resources.models_per_task may exceed 1 (several models per task).
  virtual bool PacksModels() const { return false; }
  // The metrics a gate of `spec` (defaults applied) may name, and how each
  // is read from the results (spec/gates.h). None by default.
  virtual std::vector<GateMetric> GateMetrics(const v1::AuditSpec& /*spec*/) const { return {}; }
};

// The handler of `kind`; null for KIND_NOT_SET.
const KindHandler* HandlerFor(AuditKind kind);

}  // namespace memaudit::spec

namespace memaudit {
// Each kind's file of this layer binds its handler (common/messages/kind_table.h).
MEMAUDIT_DECLARE_KIND_HANDLERS(spec::KindHandler);
}  // namespace memaudit

#endif  // MEMAUDIT_SPEC_KIND_HANDLER_H_
