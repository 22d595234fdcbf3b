#include "audits/exposure/cli_replicates_render.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "audits/exposure/cli_render.h"
#include "cli/render.h"
#include "common/base/status_macros.h"

namespace memaudit::cli {
namespace {

// The estimators in column order, each with its interval (null where it did
// not run or a replicate's value was not finite).
std::vector<std::pair<const char*, const v1::TrialMean*>> Columns(
    const v1::ExposureAcrossReplicates& a) {
  return {{"exact", a.has_exposure() ? &a.exposure() : nullptr},
          {"sampled", a.has_sampled_exposure() ? &a.sampled_exposure() : nullptr},
          {"extrapolated", a.has_extrapolated_exposure() ? &a.extrapolated_exposure() : nullptr}};
}

// The mean with the interval a re-run with other seeds (other canaries
// too) would fall in.
std::string WithInterval(const v1::TrialMean* m) {
  return m == nullptr
             ? "-"
             : absl::StrFormat("%.2f [%.2f, %.2f]", m->mean(), m->rerun_low(), m->rerun_high());
}

}  // namespace

std::string ReplicatesText(const v1::ExposureResults& x) {
  if (!x.has_replicates()) return "";
  std::string out = absl::StrFormat(
      "exposure across %u replicates (mean over %u canary models, each with its own seed and "
      "canaries, [95%% interval of a re-run with other seeds]; the rows above are replicate "
      "0):\n",
      x.replicates().count(), x.replicates().count());
  absl::StrAppend(&out, absl::StrFormat("  %-8s %-22s %-22s %s\n", "inserted", "exact", "sampled",
                                        "extrapolated"));
  for (const v1::ExposureByRepeats& g : x.by_repeats()) {
    const auto columns = Columns(g.across_replicates());
    absl::StrAppend(
        &out, absl::StrFormat("  %-8s %-22s %-22s %s\n", InsertedLabel(g.repeats()),
                              WithInterval(columns[0].second), WithInterval(columns[1].second),
                              WithInterval(columns[2].second)));
  }
  return out;
}

std::string ReplicatesHtml(const v1::ExposureResults& x) {
  if (!x.has_replicates()) return "";
  std::string html =
      "<table><tr><th>inserted</th><th>exact</th><th>sampled</th><th>extrapolated</th></tr>";
  for (const v1::ExposureByRepeats& g : x.by_repeats()) {
    absl::StrAppend(&html, "<tr><td>", InsertedLabel(g.repeats()), "</td>");
    for (const auto& [name, m] : Columns(g.across_replicates())) {
      absl::StrAppend(&html, "<td>", HtmlEscape(WithInterval(m)), "</td>");
    }
    absl::StrAppend(&html, "</tr>");
  }
  absl::StrAppend(&html, "</table>",
                  absl::StrFormat("<p>Exposure across %u replicates: each canary model trained "
                                  "on its own seed (init, batch order, dropout, DP noise), the "
                                  "same canaries; per insertion count the mean over replicates "
                                  "of each replicate's group mean, with the 95%% interval a "
                                  "re-run on as many other seeds would fall in (Student t "
                                  "across replicates, docs/scoring.md). The canary table above "
                                  "is replicate 0.</p>",
                                  x.replicates().count()));
  return html;
}

absl::Status WriteReplicatesCsv(const std::string& audit_id,
                                const std::vector<v1::ExposureVariantResult>& variants,
                                const std::string& dir) {
  std::string groups =
      "audit_id,variant,repeats,estimator,replicates,mean,low,high,stddev,rerun_low,rerun_high\n";
  std::string canaries =
      "audit_id,variant,replicate,secret,repeats,px_bits,rank,exact,exposure,sampled_exposure,"
      "sampled_lower_bound,extrapolated_exposure\n";
  bool any = false;
  for (const v1::ExposureVariantResult& v : variants) {
    const v1::ExposureResults& x = v.results();
    if (!x.has_replicates()) continue;
    any = true;
    for (const v1::ExposureByRepeats& g : x.by_repeats()) {
      for (const auto& [name, m] : Columns(g.across_replicates())) {
        if (m == nullptr) continue;
        absl::StrAppend(
            &groups,
            absl::StrFormat("%s,%s,%u,%s,%u,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g\n", audit_id,
                            v.name(), g.repeats(), name, x.replicates().count(), m->mean(),
                            m->low(), m->high(), m->stddev(), m->rerun_low(), m->rerun_high()));
      }
    }
    for (const v1::ExposureReplicate& model : x.replicates().models()) {
      // Replicates r >= 1 draw canaries of their own: each row names its own.
      for (int i = 0; i < x.canaries_size() && i < model.exposure_size(); ++i) {
        const bool sampled = i < model.sampled_exposure_size();
        const bool extrapolated = i < model.extrapolated_exposure_size();
        absl::StrAppend(
            &canaries,
            absl::StrFormat(
                "%s,%s,%u,%s,%u,%.17g,%u,%d,%.17g,%s,%s,%s\n", audit_id, v.name(),
                model.replicate(), i < model.secret_size() ? model.secret(i) : "",
                x.canaries(i).repeats(), model.px_bits(i), model.rank(i), model.exact(i),
                model.exposure(i),
                sampled ? absl::StrFormat("%.17g", model.sampled_exposure(i)) : "",
                sampled ? absl::StrCat(model.sampled_lower_bound(i) ? 1 : 0) : "",
                extrapolated ? absl::StrFormat("%.17g", model.extrapolated_exposure(i)) : ""));
      }
    }
  }
  if (!any) return absl::OkStatus();
  MEMAUDIT_RETURN_IF_ERROR(WriteFile(dir + "/exposure_replicates.csv", groups));
  return WriteFile(dir + "/exposure_replicate_canaries.csv", canaries);
}

}  // namespace memaudit::cli
