#include "services/coordinator/spec_validator.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/membership_tasks.h"
#include "services/coordinator/kind_handler.h"

namespace memaudit::coordinator {

std::string KindName(const v1::AuditSpec& spec) { return AuditKindName(spec.kind_case()); }

bool KindImplemented(const v1::AuditSpec& spec) { return HandlerFor(spec.kind_case()) != nullptr; }

void ApplyDefaults(v1::AuditSpec* spec) {
  v1::Resources* r = spec->mutable_resources();
  if (r->threads_per_task() == 0) r->set_threads_per_task(1);
  if (r->max_attempts() == 0) r->set_max_attempts(3);
  if (const KindHandler* kind = HandlerFor(spec->kind_case())) kind->ApplyDefaults(spec);
}

std::vector<SpecProblem> FindProblems(const v1::AuditSpec& spec) {
  std::vector<SpecProblem> problems;
  if (spec.resources().threads_per_task() > 256) {
    problems.push_back({"resources.threads_per_task", "must be in [1, 256]"});
  }
  if (spec.resources().max_attempts() > 100) {
    problems.push_back({"resources.max_attempts", "must be in [1, 100]"});
  }
  const KindHandler* kind = HandlerFor(spec.kind_case());
  if (kind == nullptr) {
    std::vector<std::string> names;
    for (AuditKind k : AllAuditKinds()) names.push_back(AuditKindName(k));
    problems.push_back({"kind", absl::StrCat("set exactly one of: ", absl::StrJoin(names, ", "))});
    return problems;
  }
  const uint32_t packed = spec.resources().models_per_task();
  if (packed > membership::kMaxModelsPerTask) {
    problems.push_back(
        {"resources.models_per_task",
         absl::StrCat("must be in [1, ", membership::kMaxModelsPerTask, "] (got ", packed, ")")});
  } else if (packed > 1 && !kind->PacksModels()) {
    problems.push_back(
        {"resources.models_per_task",
         absl::StrCat("only membership audits pack models; must be 1 (got ", packed, ")")});
  }
  kind->Validate(spec, &problems);
  return problems;
}

absl::Status ValidateSpec(const v1::AuditSpec& spec) {
  std::vector<SpecProblem> problems = FindProblems(spec);
  if (problems.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrJoin(
      problems, "; ",
      [](std::string* out, const SpecProblem& p) { absl::StrAppend(out, p.field, ": ", p.rule); }));
}

}  // namespace memaudit::coordinator
