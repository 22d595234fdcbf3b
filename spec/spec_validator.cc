#include "spec/spec_validator.h"

#include <algorithm>
#include <optional>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "audits/membership/tasks.h"
#include "common/base/error_details.h"
#include "common/messages/spec_paths.h"
#include "common/messages/task_fit.h"
#include "common/training/model_spec.h"
#include "common/training/numerics.h"
#include "memaudit/v1/errors.pb.h"
#include "spec/dataset_rules.h"
#include "spec/kind_handler.h"
#include "spec/spec_rules.h"

namespace memaudit::spec {

std::string KindName(const v1::AuditSpec& spec) { return AuditKindName(spec.kind_case()); }

bool KindImplemented(const v1::AuditSpec& spec) { return HandlerFor(spec.kind_case()) != nullptr; }

void ApplyDefaults(v1::AuditSpec* spec) {
  v1::Resources* r = spec->mutable_resources();
  if (r->threads_per_task() == 0) r->set_threads_per_task(1);
  if (r->max_attempts() == 0) r->set_max_attempts(3);
  if (r->numerics().empty()) r->set_numerics(kPortableNumerics);
  if (const KindHandler* kind = HandlerFor(spec->kind_case())) kind->ApplyDefaults(spec);
}

namespace {

// Whether the spec's models train with the generic trainer, one at a time,
// which is what trains data-parallel (engine/classifier_run.cc).
bool TrainsDataParallel(const v1::AuditSpec& spec) {
  if (!spec.has_membership()) return false;
  const std::string& arch = spec.membership().model().architecture();
  return arch == engine::ModelKindName(engine::ModelKind::kCnn) ||
         arch == engine::ModelKindName(engine::ModelKind::kTorchScript);
}

}  // namespace

std::vector<SpecProblem> FindProblems(const v1::AuditSpec& spec) {
  std::vector<SpecProblem> problems;
  CheckAuditName(spec.name(), [&](std::string field, std::string rule) {
    problems.push_back({std::move(field), std::move(rule)});
  });
  if (spec.resources().threads_per_task() > 256) {
    problems.push_back({"resources.threads_per_task", "must be in [1, 256]"});
  }
  if (spec.resources().max_attempts() > 100) {
    problems.push_back({"resources.max_attempts", "must be in [1, 100]"});
  }
  if (spec.resources().gpus_per_task() > kMaxGpusPerTask) {
    problems.push_back(
        {"resources.gpus_per_task",
         absl::StrCat("must be in [0, ", kMaxGpusPerTask, "]: the GPUs of one worker (got ",
                      spec.resources().gpus_per_task(), ")")});
  } else if (spec.resources().gpus_per_task() > 1 && !TrainsDataParallel(spec)) {
    problems.push_back(
        {"resources.gpus_per_task",
         absl::StrCat("more than 1 trains each model data-parallel across the GPUs, which "
                      "membership audits of cnn and torchscript models do; this spec trains "
                      "on one device (got ",
                      spec.resources().gpus_per_task(), ")")});
  }
  if (spec.resources().memory_mb_per_task() > kMaxMemoryMbPerTask) {
    problems.push_back(
        {"resources.memory_mb_per_task", absl::StrCat("must be at most ", kMaxMemoryMbPerTask)});
  }
  if (spec.resources().priority() < -100 || spec.resources().priority() > 100) {
    problems.push_back({"resources.priority", absl::StrCat("must be in [-100, 100] (got ",
                                                           spec.resources().priority(), ")")});
  }
  const v1::Resources& r = spec.resources();
  if (!r.numerics().empty()) {
    if (auto mode = ParseNumericsMode(r.numerics()); !mode.ok()) {
      problems.push_back({"resources.numerics", std::string(mode.status().message())});
    }
  }
  if (std::string problem = NumericClassProblem(r.numeric_class()); !problem.empty()) {
    problems.push_back({"resources.numeric_class", problem});
  } else if (!r.numeric_class().empty() &&
             (r.numerics() != kNativeNumerics || !IsNativeClass(r.numeric_class()))) {
    problems.push_back({"resources.numeric_class",
                        "names a native class (\"native/...\", a worker's numeric_class) and "
                        "needs resources.numerics: native"});
  }
  if (r.numeric_environments_size() > 0) {
    problems.push_back({"resources.numeric_environments",
                        "is recorded by the coordinator from the workers that train the audit; "
                        "a spec may not set it"});
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
  const size_t before = problems.size();
  kind->Validate(spec, &problems);
  if (spec.gates_size() > 0) {
    // A kind's metrics follow from a valid spec of it (its attacks, its FPR
    // points): gate metrics are named against them only then.
    std::optional<std::vector<GateMetric>> metrics;
    if (problems.size() == before) metrics = kind->GateMetrics(spec);
    ValidateGates(spec, metrics ? &*metrics : nullptr, &problems);
  }
  return problems;
}

std::vector<SpecProblem> FindProblems(const v1::AuditSpec& spec, const DataRoots& roots) {
  std::vector<SpecProblem> problems = FindProblems(spec);
  for (SpecPath& p : SpecPaths(spec)) {
    if (p.path.size() > kMaxPathBytes) continue;  // already a problem of its own
    if (std::string rule = roots.Problem(p.path); !rule.empty()) {
      problems.push_back({std::move(p.field), std::move(rule)});
    }
  }
  return problems;
}

std::vector<SpecProblem> PrepareSpecProblems(v1::AuditSpec* spec, const DataRoots& roots) {
  bool paths_ok = true;
  for (const SpecPath& p : SpecPaths(*spec)) {
    if (p.path.size() > kMaxPathBytes || !roots.Problem(p.path).empty()) paths_ok = false;
  }
  const KindHandler* kind = HandlerFor(spec->kind_case());
  if (paths_ok && kind != nullptr) {
    std::vector<SpecProblem> unreadable;
    kind->ReadFiles(spec, &unreadable);
    if (!unreadable.empty()) return unreadable;
  }
  ApplyDefaults(spec);
  std::vector<SpecProblem> problems = FindProblems(*spec, roots);
  if (!paths_ok) {
    // Files outside the roots were not read: that they hold no recorded
    // facts yet is no problem of its own.
    problems.erase(std::remove_if(problems.begin(), problems.end(),
                                  [](const SpecProblem& p) { return p.rule == kNotRecorded; }),
                   problems.end());
  }
  return problems;
}

SpecProblem ProblemOf(const absl::Status& status) {
  const absl::string_view message = status.message();
  const size_t colon = message.find(": ");
  if (colon == absl::string_view::npos ||
      message.substr(0, colon).find(' ') != absl::string_view::npos) {
    return {"", std::string(message)};
  }
  return {std::string(message.substr(0, colon)), std::string(message.substr(colon + 2))};
}

size_t ErrorWireBytes(absl::string_view message) {
  size_t bytes = 0;
  for (unsigned char c : message) bytes += c < 0x20 || c > 0x7E || c == '%' ? 3 : 1;
  return bytes;
}

std::string BoundErrorMessage(absl::string_view message) {
  if (ErrorWireBytes(message) <= kMaxErrorWireBytes) return std::string(message);
  constexpr size_t kRoom = 64;  // for the mark
  size_t bytes = 0, end = 0;
  for (; end < message.size(); ++end) {
    bytes += ErrorWireBytes(message.substr(end, 1));
    if (bytes > kMaxErrorWireBytes - kRoom) break;
  }
  while (end > 0 && (static_cast<unsigned char>(message[end]) & 0xC0) == 0x80) --end;
  return absl::StrCat(message.substr(0, end), " [cut: ", message.size(), " bytes]");
}

namespace {

// OK, or INVALID_ARGUMENT listing `problems` (see ValidateSpec).
// The shown problems as data (errors.proto), within kMaxViolationBytes.
absl::Cord ViolationsDetails(const std::vector<SpecProblem>& problems, size_t shown,
                             const std::string& message) {
  v1::FieldViolations violations;
  size_t bytes = 0;
  for (size_t i = 0; i < shown; ++i) {
    bytes += problems[i].field.size() + problems[i].rule.size();
    if (i > 0 && bytes > kMaxViolationBytes) break;
    v1::FieldViolations::Violation* v = violations.add_violations();
    v->set_field(problems[i].field);
    v->set_description(problems[i].rule);
  }
  violations.set_more(static_cast<uint32_t>(problems.size()) - violations.violations_size());
  v1::ErrorStatus status;
  status.set_code(static_cast<int32_t>(absl::StatusCode::kInvalidArgument));
  status.set_message(message);
  status.add_details()->PackFrom(violations);
  return absl::Cord(status.SerializeAsString());
}

absl::Status ProblemsStatus(const std::vector<SpecProblem>& problems) {
  if (problems.empty()) return absl::OkStatus();
  constexpr size_t kRoom = 100;  // for the count of the rest
  std::string message;
  size_t shown = 0;
  for (const SpecProblem& p : problems) {
    const std::string line = absl::StrCat(shown == 0 ? "" : "; ", p.field, ": ", p.rule);
    if (shown > 0 &&
        ErrorWireBytes(message) + ErrorWireBytes(line) > kMaxProblemsWireBytes - kRoom) {
      break;
    }
    absl::StrAppend(&message, line);
    ++shown;
  }
  if (shown < problems.size()) {
    absl::StrAppend(&message, "; and ", problems.size() - shown,
                    " more problem(s): `memaudit validate SPEC` lists them all");
  }
  absl::Status status = absl::InvalidArgumentError(BoundErrorMessage(message));
  status.SetPayload(kErrorDetailsPayload,
                    ViolationsDetails(problems, shown, std::string(status.message())));
  return status;
}

}  // namespace

absl::Status ValidateSpec(const v1::AuditSpec& spec) { return ProblemsStatus(FindProblems(spec)); }

absl::Status ValidateSpec(const v1::AuditSpec& spec, const DataRoots& roots) {
  return ProblemsStatus(FindProblems(spec, roots));
}

absl::Status PrepareSpec(v1::AuditSpec* spec, const DataRoots& roots) {
  return ProblemsStatus(PrepareSpecProblems(spec, roots));
}

}  // namespace memaudit::spec
