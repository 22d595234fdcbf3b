// The per-example arrays of a membership audit (docs/export.md): what its
// results pool, before pooling.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "audits/membership/scorer_metrics.h"
#include "common/base/parallel_for.h"
#include "common/base/seeding.h"
#include "common/base/status_macros.h"
#include "common/messages/export_arrays.h"
#include "spec/dataset_facts.h"

namespace memaudit::scorer {
namespace {

std::vector<double> AsDoubles(const std::vector<uint8_t>& bits) {
  return std::vector<double>(bits.begin(), bits.end());
}

}  // namespace

absl::StatusOr<std::vector<v1::ExportArray>> MembershipExport(ScorerStore& store,
                                                              const std::string& audit_id,
                                                              const v1::AuditSpec& spec) {
  MEMAUDIT_ASSIGN_OR_RETURN(auto matrices, LoadMembershipMatrices(store, audit_id, spec));
  if (!matrices.has_value()) {
    return absl::FailedPreconditionError(absl::StrCat("audit ", audit_id, ": signals missing"));
  }
  const MembershipMatrices& m = *matrices;
  const uint64_t models = m.keep.rows, examples = m.keep.cols;
  std::vector<v1::ExportArray> out;
  out.push_back(MakeExportArray("keep", {"model", "example"}, {models, examples}, v1::UINT8,
                                "1 when the model trained on the pool example",
                                AsDoubles(m.keep.data)));
  const bool documents = spec.membership().has_documents();
  out.push_back(MakeExportArray("phi", {"model", "example"}, {models, examples}, v1::FLOAT64,
                                documents
                                    ? "mean log-probability of the sequence's tokens, nats"
                                    : "logit-scaled confidence in the true label, log(p / (1 - p))",
                                m.phi.data));
  out.push_back(MakeExportArray(
      "loss", {"model", "example"}, {models, examples}, v1::FLOAT64,
      documents ? "mean cross-entropy per token, nats" : "cross-entropy loss, nats", m.loss.data));
  if (m.population_loss.cols > 0) {
    out.push_back(MakeExportArray(
        "loss_population", {"model", "population_example"}, {models, m.population_loss.cols},
        v1::FLOAT64, "cross-entropy loss on RMIA's population, nats", m.population_loss.data));
  }
  std::vector<double> targets(m.targets);
  for (size_t t = 0; t < m.targets; ++t) targets[t] = static_cast<double>(m.first_target + t);
  out.push_back(MakeExportArray("target_model", {"target"}, {m.targets}, v1::INT64,
                                "the model each row of the score arrays attacks",
                                std::move(targets)));
  // Each attack's scores alone, side by side; added in the spec's order.
  const auto& attacks = spec.membership().attacks();
  std::vector<absl::StatusOr<std::vector<double>>> scored(attacks.size());
  ParallelFor(scored.size(), 0,
              [&](size_t i) { scored[i] = MembershipTargetScores(attacks[i], m); });
  for (int i = 0; i < attacks.size(); ++i) {
    const std::string& attack = attacks[i];
    MEMAUDIT_ASSIGN_OR_RETURN(auto scores, std::move(scored[i]));
    out.push_back(MakeExportArray(
        absl::StrCat("score_", attack), {"target", "example"}, {m.targets, examples}, v1::FLOAT64,
        absl::StrCat(attack,
                     " membership score (higher = more likely a member); the truth is "
                     "keep[target_model[target], example]"),
        std::move(scores)));
  }
  // A sequence's place among the corpus's is the engine's (after tokenizing).
  if (documents) return out;
  const v1::DatasetSpec& dataset = spec.membership().dataset();
  const std::vector<uint32_t> pool =
      AuditPool(spec.seed(), DatasetRows(dataset), dataset.pool_size());
  out.push_back(MakeExportArray("dataset_index", {"example"}, {examples}, v1::INT64,
                                "row of the pool example in the dataset's training rows",
                                std::vector<double>(pool.begin(), pool.end())));
  return out;
}

}  // namespace memaudit::scorer
