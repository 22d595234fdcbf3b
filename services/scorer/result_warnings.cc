#include "services/scorer/result_warnings.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "audits/exposure/signals.h"
#include "audits/membership/attacks.h"
#include "audits/membership/tasks.h"
#include "audits/relational/signals.h"
#include "spec/dataset_facts.h"

namespace memaudit::scorer {
namespace {

v1::ResultWarning Warning(std::string code, std::string message) {
  v1::ResultWarning w;
  w.set_code(std::move(code));
  w.set_message(std::move(message));
  return w;
}

}  // namespace

std::vector<v1::ResultWarning> MembershipWarnings(const v1::MembershipAudit& m) {
  std::vector<v1::ResultWarning> out;
  const uint32_t n = m.reference_models();
  if (n < membership::kFewReferenceModels) {
    out.push_back(Warning(
        "few_reference_models",
        absl::StrCat("with ", n,
                     " reference models LiRA fits each example's IN and OUT "
                     "distributions to ",
                     n / 2 - 1, " or ", n / 2, " values: its numbers are noisy; use ",
                     membership::kFewReferenceModels,
                     " or more (Membership Inference Attacks From First Principles trains 64)")));
  }
  const uint32_t rows = DatasetRows(m.dataset());
  const auto named = [&m](const std::string& name) {
    return std::find(m.attacks().begin(), m.attacks().end(), name) != m.attacks().end();
  };
  std::vector<std::string> left_out;
  uint32_t left_out_needs = 0;
  for (const membership::Attack& a : membership::Attacks()) {
    const std::string name = membership::AttackName(a.id);
    if (!membership::IsDefault(a, m) || named(name)) continue;
    const membership::DefaultFit fit =
        membership::FitOfDefault(a, n, rows, membership::PoolSize(m));
    if (fit == membership::DefaultFit::kNoPopulation) {
      out.push_back(Warning("no_population",
                            absl::StrCat(name, " not run: the pool takes all ", rows,
                                         " rows of the dataset, leaving none for its population; "
                                         "use pool_size < ",
                                         rows)));
    } else if (fit == membership::DefaultFit::kTooFewReferenceModels) {
      if (left_out.empty()) left_out_needs = a.min_reference_models;
      left_out.push_back(name);
    }
  }
  if (!left_out.empty()) {
    out.push_back(
        Warning("attacks_left_out",
                absl::StrCat(absl::StrJoin(left_out, ", "), " not run: undefined with ", n,
                             " reference models (a per-example variance needs reference_models >= ",
                             left_out_needs, ")")));
  }
  return out;
}

std::vector<v1::ResultWarning> ForgettingWarnings(const v1::ForgettingAudit& f) {
  std::vector<v1::ResultWarning> out;
  // A construction's intervals are exact binomial ones, valid at any count.
  if (f.has_construction()) return out;
  if (f.trials() == 1) {
    out.push_back(Warning("few_trials", absl::StrCat("one trial: every interval is the point "
                                                     "itself; use trials >= ",
                                                     kFewTrials)));
  } else if (f.trials() < kFewTrials) {
    out.push_back(Warning(
        "few_trials",
        absl::StrCat("intervals across ", f.trials(), " trials are wide (Student's t with ",
                     f.trials() - 1, " degree(s) of freedom); use trials >= ", kFewTrials)));
  }
  return out;
}

namespace {

std::vector<v1::ResultWarning> FewReplicates(uint32_t k) {
  std::vector<v1::ResultWarning> out;
  if (k > 1 && k < kFewTrials) {
    out.push_back(
        Warning("few_replicates",
                absl::StrCat("intervals across ", k, " replicates are wide (Student's t with ",
                             k - 1, " degree(s) of freedom); use replicates >= ", kFewTrials)));
  }
  return out;
}

}  // namespace

std::vector<v1::ResultWarning> ExposureWarnings(const v1::ExposureAudit& e) {
  return FewReplicates(exposure::Replicates(e));
}

std::vector<v1::ResultWarning> RelationalWarnings(const v1::RelationalAudit& r) {
  return FewReplicates(relational::Replicates(r));
}

}  // namespace memaudit::scorer
