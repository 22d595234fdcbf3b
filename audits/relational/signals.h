// Observation names and shared shape rules of a `relational` audit (worker ->
// scorer contract). One task per variant (phone book: a model width; linear:
// a key dimension d_x) and replicate; `run` is the task's index (Runs). Kept header-only and
// torch-free so the coordinator, worker and scorer agree without linking
// the engine.
#ifndef MEMAUDIT_AUDITS_RELATIONAL_SIGNALS_H_
#define MEMAUDIT_AUDITS_RELATIONAL_SIGNALS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/base/seeding.h"
#include "common/base/steps.h"
#include "memaudit/v1/spec.pb.h"

namespace memaudit::relational {

inline constexpr char kTaskRole[] = "relational_variant";

// Point of the ground truth, sent once per task with the first measured point.
inline constexpr char kTruthPoint[] = "truth";

// Phone book, at kTruthPoint: the true numbers as UTF-8 bytes, one value per
// byte, each number followed by '\n' (training records, held-out records).
inline constexpr char kNumbersTrain[] = "numbers_train";
inline constexpr char kNumbersVal[] = "numbers_val";
// Phone book, at each epoch "<e>": the model's greedy completions of the
// corrupted prompts, same encoding and order as the numbers.
inline constexpr char kPredictedTrain[] = "predicted_train";
inline constexpr char kPredictedVal[] = "predicted_val";

// Linear, at kTruthPoint: t_i of the training and held-out samples.
inline constexpr char kTargetTrain[] = "target_train";
inline constexpr char kTargetVal[] = "target_val";
// Linear, at each step "<t>": the adversary's estimates t_hat_i.
inline constexpr char kRecoveredTrain[] = "recovered_train";
inline constexpr char kRecoveredVal[] = "recovered_val";

// Both models, at each point: one value, the clean task on training and
// held-out data (phone book: next-character accuracy; linear: mean squared
// error).
inline constexpr char kCleanTrain[] = "clean_train";
inline constexpr char kCleanVal[] = "clean_val";

// The linear model's one success metric.
inline constexpr char kWithinTolerance[] = "within_tolerance";

inline constexpr char kDefaultTemplate[] = "{name}'s number is {number}.";
inline constexpr char kNamePlaceholder[] = "{name}";
inline constexpr char kNumberPlaceholder[] = "{number}";

// Why `tmpl` cannot render records, or "" when it can: one {name}, one
// {number} after it (a left-to-right model must read the name before the
// number), no newline (a record is one line).
inline std::string TemplateProblem(const std::string& tmpl) {
  const size_t name = tmpl.find(kNamePlaceholder);
  const size_t number = tmpl.find(kNumberPlaceholder);
  if (name == std::string::npos || number == std::string::npos) {
    return "must contain {name} and {number}";
  }
  if (tmpl.find(kNamePlaceholder, name + 1) != std::string::npos ||
      tmpl.find(kNumberPlaceholder, number + 1) != std::string::npos) {
    return "must contain {name} and {number} once each";
  }
  if (number < name) return "{name} must come before {number}";
  if (tmpl.find('\n') != std::string::npos) return "must not contain a newline";
  return "";
}

// Variant labels, one task each: "units=64", "d_x=95" or "torchscript" (a
// team's module, whose width the spec does not set).
inline std::vector<std::string> Variants(const v1::RelationalAudit& r) {
  std::vector<std::string> out;
  if (r.has_linear()) {
    for (uint32_t d : r.linear().key_dims()) out.push_back(absl::StrCat("d_x=", d));
  } else if (r.phone_book().model().architecture() == "torchscript") {
    out.push_back("torchscript");
  } else if (r.phone_book().units_sweep().empty()) {
    out.push_back(absl::StrCat("units=", r.phone_book().model().units()));
  } else {
    for (uint32_t u : r.phone_book().units_sweep()) out.push_back(absl::StrCat("units=", u));
  }
  return out;
}

// Replicates of the whole audit (spec.replicates, 1 when unset). Task i,
// and the observations' run i, is variant i % V of replicate i / V, so
// replicate 0's runs are the variants as without replicates.
inline uint32_t Replicates(const v1::RelationalAudit& r) {
  return r.has_replicates() ? r.replicates() : 1;
}
inline uint32_t Runs(const v1::RelationalAudit& r) {
  return static_cast<uint32_t>(Variants(r).size()) * Replicates(r);
}
inline uint32_t VariantOfRun(const v1::RelationalAudit& r, uint32_t run) {
  return run % static_cast<uint32_t>(Variants(r).size());
}
inline uint32_t ReplicateOfRun(const v1::RelationalAudit& r, uint32_t run) {
  return run / static_cast<uint32_t>(Variants(r).size());
}
// The seed replicate `replicate` derives everything from: the audit's own
// for replicate 0.
inline uint64_t ReplicateSeed(uint64_t seed, uint32_t replicate) {
  return replicate == 0 ? seed : DeriveSeed(seed, "relational_replicate", replicate);
}

// The model width of phone-book variant `index`.
inline uint32_t VariantUnits(const v1::PhoneBookSpec& p, uint32_t index) {
  return p.units_sweep().empty() ? p.model().units() : p.units_sweep(index);
}

// Measurement points, ascending: epochs 1..E (phone book) or the GD steps.
inline std::vector<uint64_t> Points(const v1::RelationalAudit& r) {
  std::vector<uint64_t> out;
  if (r.has_linear()) {
    out.assign(r.linear().steps().begin(), r.linear().steps().end());
  } else {
    for (uint32_t e = 1; e <= r.phone_book().training().epochs(); ++e) out.push_back(e);
  }
  return out;
}

// Progress units of one task: optimizer steps of the phone book's LM (one
// record per sequence, ceil(records / batch) per epoch), or the linear
// model's last GD step (reached in closed form).
inline uint64_t TaskSteps(const v1::RelationalAudit& r) {
  if (r.has_linear()) {
    return r.linear().steps().empty() ? 0 : r.linear().steps(r.linear().steps_size() - 1);
  }
  const uint64_t batch = r.phone_book().training().batch_size();
  return StepsPerEpoch(r.phone_book().records(), batch) * r.phone_book().training().epochs();
}

// Success metric names of the results: the spec's (phone book) or
// within_tolerance (linear).
inline std::vector<std::string> MetricNames(const v1::RelationalAudit& r) {
  if (r.has_linear()) return {kWithinTolerance};
  return {r.metrics().begin(), r.metrics().end()};
}

inline void AppendLines(const std::vector<std::string>& lines, std::vector<double>* out) {
  for (const std::string& line : lines) {
    for (unsigned char c : line) out->push_back(static_cast<double>(c));
    out->push_back('\n');
  }
}

}  // namespace memaudit::relational

#endif  // MEMAUDIT_AUDITS_RELATIONAL_SIGNALS_H_
