#include "audits/relational/spec.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "audits/relational/signals.h"
#include "spec/dataset_rules.h"
#include "spec/spec_rules.h"

namespace memaudit::spec {
namespace {

constexpr uint32_t kMaxRecords = 100000;
constexpr uint32_t kMaxEpochs = 1000;  // every epoch is a measured point
constexpr int kMaxVariants = 16;
constexpr uint32_t kMaxReplicates = 16;  // 16 variants x 16 replicates bound the tasks
constexpr int kMaxSteps = 64;
constexpr uint64_t kMaxStep = 1'000'000'000'000;  // closed form: any step is one evaluation
constexpr uint32_t kMaxSamples = 2000;            // eigendecomposition of an N x N matrix
constexpr uint32_t kMaxKeyDims = 1'000'000;
// |t_hat - t| < tolerance with t ~ N(0, 1): past a few units every guess succeeds.
constexpr double kMaxTolerance = 100;

// One model per variant and replicate: parameters (the phone-book LM's, or the linear
// model's N x d design matrix, which it holds) x steps.
void CheckRelationalCost(const v1::RelationalAudit& r, const AddProblem& add) {
  std::vector<ModelGroup> groups;
  const double steps = static_cast<double>(relational::TaskSteps(r));
  const double replicates = relational::Replicates(r);
  if (r.has_linear()) {
    const v1::LinearRelationalSpec& l = r.linear();
    for (uint32_t d : l.key_dims()) {
      // Closed form: one evaluation per measured step, over N training and N
      // held-out samples.
      groups.push_back({replicates, 2.0 * l.samples() * (static_cast<double>(l.label_dims()) + d),
                        static_cast<double>(l.steps_size())});
    }
    CheckCost(groups, "linear.key_dims",
              "linear.samples, linear.key_dims, linear.label_dims or replicates", add);
    return;
  }
  const v1::PhoneBookSpec& p = r.phone_book();
  const size_t variants = relational::Variants(r).size();
  for (uint32_t v = 0; v < variants; ++v) {
    groups.push_back({replicates,
                      CharLmParameters(p.model().architecture(), p.model().layers(),
                                       relational::VariantUnits(p, v), p.model().embedding()),
                      steps});
  }
  CheckCost(groups, "phone_book.model.units",
            "phone_book.training.epochs, phone_book.records, phone_book.model.units, "
            "phone_book.units_sweep or replicates",
            add);
}

using Add = AddProblem;

void ValidatePhoneBook(const v1::PhoneBookSpec& p, const Add& add) {
  if (p.records() == 0 || p.records() > kMaxRecords) {
    add("phone_book.records",
        absl::StrCat("must be in [1, ", kMaxRecords, "] (got ", p.records(), ")"));
  }
  if (p.validation_records() == 0 || p.validation_records() > kMaxRecords) {
    add("phone_book.validation_records",
        absl::StrCat("must be in [1, ", kMaxRecords, "] (got ", p.validation_records(), ")"));
  }
  if (CheckLength("phone_book.template", p.template_(), kMaxPrefixBytes, add)) {
    if (std::string why = relational::TemplateProblem(p.template_()); !why.empty()) {
      add("phone_book.template", absl::StrCat(why, " (got ", QuoteValue(p.template_()), ")"));
    }
  }
  if (p.digits() == 0 || p.digits() > 20) {
    add("phone_book.digits", absl::StrCat("must be in [1, 20] (got ", p.digits(), ")"));
  }
  const v1::LanguageModelSpec& m = p.model();
  // A TorchScript module has its own sizes: layers, units and embedding are
  // not checked (nor used) for it, and no units_sweep can vary them.
  CheckLanguageModel("phone_book.model.", m, {}, add);
  if (m.architecture() == engine::ModelKindName(engine::ModelKind::kTorchScript) &&
      p.units_sweep_size() > 0) {
    add("phone_book.units_sweep", "cannot vary units with model.architecture \"torchscript\"");
  }
  const v1::LanguageModelTraining& t = p.training();
  const AddProblem in_book = [&](const std::string& field, std::string rule) {
    add("phone_book." + field, std::move(rule));
  };
  CheckOneOf("training.optimizer", t.optimizer(), {"adam", "sgd", "momentum", "rmsprop"}, in_book);
  CheckLearningRate(t.learning_rate(), in_book);
  CheckWeightDecay(t.weight_decay(), in_book);
  if (t.epochs() == 0 || t.epochs() > kMaxEpochs) {
    add("phone_book.training.epochs",
        absl::StrCat("must be in [1, ", kMaxEpochs, "] (got ", t.epochs(), ")"));
  }
  CheckBatchSize(t.batch_size(), in_book);
  if (t.window() != 0) {
    add("phone_book.training.window",
        "must be unset: each record is one training sequence (no windows)");
  }
  const bool sweep_ok = p.units_sweep_size() <= kMaxVariants;
  if (!sweep_ok) {
    add("phone_book.units_sweep", absl::StrCat("must list at most ", kMaxVariants, " widths (got ",
                                               p.units_sweep_size(), ")"));
  }
  std::set<uint32_t> widths;
  for (int i = 0; sweep_ok && i < p.units_sweep_size(); ++i) {
    const std::string field = absl::StrCat("phone_book.units_sweep[", i, "]");
    if (p.units_sweep(i) == 0 || p.units_sweep(i) > 4096) {
      add(field, absl::StrCat("must be in [1, 4096] (got ", p.units_sweep(i), ")"));
    } else if (!widths.insert(p.units_sweep(i)).second) {
      add(field, absl::StrCat("repeats ", p.units_sweep(i), " (each width is one variant)"));
    }
  }
}

void ValidateLinear(const v1::LinearRelationalSpec& l, const Add& add) {
  if (l.samples() < 2 || l.samples() > kMaxSamples) {
    add("linear.samples",
        absl::StrCat("must be in [2, ", kMaxSamples, "] (got ", l.samples(), ")"));
  }
  if (l.label_dims() == 0 || l.label_dims() > 10000) {
    add("linear.label_dims", absl::StrCat("must be in [1, 10000] (got ", l.label_dims(), ")"));
  }
  const bool dims_ok = !l.key_dims().empty() && l.key_dims_size() <= kMaxVariants;
  if (!dims_ok) {
    add("linear.key_dims",
        absl::StrCat("must list 1 to ", kMaxVariants, " dimensions (got ", l.key_dims_size(), ")"));
  }
  std::set<uint32_t> dims;
  for (int i = 0; dims_ok && i < l.key_dims_size(); ++i) {
    const std::string field = absl::StrCat("linear.key_dims[", i, "]");
    if (l.key_dims(i) == 0 || l.key_dims(i) > kMaxKeyDims) {
      add(field, absl::StrCat("must be in [1, ", kMaxKeyDims, "] (got ", l.key_dims(i), ")"));
    } else if (!dims.insert(l.key_dims(i)).second) {
      add(field, absl::StrCat("repeats ", l.key_dims(i), " (each d_x is one variant)"));
    }
  }
  const bool steps_ok = !l.steps().empty() && l.steps_size() <= kMaxSteps;
  if (!steps_ok) {
    add("linear.steps",
        absl::StrCat("must list 1 to ", kMaxSteps, " steps (got ", l.steps_size(), ")"));
  }
  for (int i = 0; steps_ok && i < l.steps_size(); ++i) {
    const std::string field = absl::StrCat("linear.steps[", i, "]");
    if (i > 0 && l.steps(i) <= l.steps(i - 1)) {
      add(field, "must be strictly ascending");
    } else if (l.steps(i) > kMaxStep) {
      add(field, absl::StrCat("must be <= ", kMaxStep, " (got ", l.steps(i), ")"));
    }
  }
  if (!(l.tolerance() > 0) || !std::isfinite(l.tolerance())) {
    add("linear.tolerance", absl::StrCat("must be > 0 (got ", l.tolerance(), ")"));
  } else if (l.tolerance() > kMaxTolerance) {
    add("linear.tolerance",
        absl::StrCat("must be in (0, ", kMaxTolerance, "] (got ", l.tolerance(), ")"));
  }
  if (!(l.step_fraction() > 0 && l.step_fraction() < 2)) {
    add("linear.step_fraction",
        absl::StrCat("must be in (0, 2), where GD is stable (got ", l.step_fraction(), ")"));
  }
}

}  // namespace

void ApplyRelationalDefaults(v1::RelationalAudit* r) {
  if (r->has_linear()) {
    v1::LinearRelationalSpec* l = r->mutable_linear();
    if (l->samples() == 0) l->set_samples(100);
    if (l->label_dims() == 0) l->set_label_dims(5);
    if (l->key_dims().empty()) {
      for (uint32_t d : {20, 95, 1000}) l->add_key_dims(d);
    }
    if (l->steps().empty()) {
      for (uint64_t s = 1; s <= 100000; s *= 10) l->add_steps(s);
    }
    if (l->tolerance() == 0) l->set_tolerance(0.25);
    if (l->step_fraction() == 0) l->set_step_fraction(1.0);
    return;
  }
  v1::PhoneBookSpec* p = r->mutable_phone_book();
  if (p->records() == 0) p->set_records(128);
  if (p->validation_records() == 0) p->set_validation_records(p->records());
  if (p->template_().empty()) p->set_template_(relational::kDefaultTemplate);
  if (p->digits() == 0) p->set_digits(7);
  v1::LanguageModelSpec* m = p->mutable_model();
  ApplyLanguageModelDefaults(m);
  v1::LanguageModelTraining* t = p->mutable_training();
  if (t->optimizer().empty()) t->set_optimizer("adam");
  if (t->learning_rate() == 0) t->set_learning_rate(5e-3);
  if (t->epochs() == 0) t->set_epochs(80);
  if (t->batch_size() == 0) t->set_batch_size(16);
  if (r->metrics().empty()) {
    r->add_metrics("exact_match");
    r->add_metrics("digit_f1");
  }
}

void ValidateRelational(const v1::RelationalAudit& r, std::vector<SpecProblem>* problems) {
  const Add add = [&](const std::string& field, std::string rule) {
    problems->push_back({absl::StrCat("relational.", field), std::move(rule)});
  };
  const size_t before = problems->size();
  // Whole copies of the audit, each on its own seed (relational::Runs).
  if (r.has_replicates() && (r.replicates() == 0 || r.replicates() > kMaxReplicates)) {
    add("replicates",
        absl::StrCat("must be in [1, ", kMaxReplicates, "] (got ", r.replicates(), ")"));
  }
  if (r.has_linear()) {
    ValidateLinear(r.linear(), add);
    if (!r.metrics().empty()) {
      add("metrics",
          "applies to the phone book only (the linear model's success is "
          "|t_hat - t| < tolerance); leave it unset");
    }
    if (problems->size() == before) CheckRelationalCost(r, add);
    return;
  }
  if (!r.has_phone_book()) {
    add("model", "set one of phone_book, linear");
    return;
  }
  ValidatePhoneBook(r.phone_book(), add);
  std::set<std::string> seen;
  const bool metrics_ok = CheckListSize("metrics", r.metrics_size(), 0, kMaxNameLists, add);
  for (int i = 0; metrics_ok && i < r.metrics_size(); ++i) {
    const std::string field = absl::StrCat("metrics[", i, "]");
    if (!OneOf(r.metrics(i), {"exact_match", "digit_f1"})) {
      add(field, absl::StrCat("must be \"exact_match\" or \"digit_f1\" (got ",
                              QuoteValue(r.metrics(i)), ")"));
    } else if (!seen.insert(r.metrics(i)).second) {
      add(field, absl::StrCat("repeats ", QuoteValue(r.metrics(i))));
    }
  }
  // The estimate needs every field in range: only then is it the audit's.
  if (problems->size() == before) CheckRelationalCost(r, add);
}

namespace {

class Relational final : public KindHandler {
 public:
  void ReadFiles(v1::AuditSpec* spec, std::vector<SpecProblem>* problems) const override {
    if (spec->relational().phone_book().model().has_tokenizer()) {
      ReadTokenizerFile(
          spec->mutable_relational()->mutable_phone_book()->mutable_model()->mutable_tokenizer(),
          "relational.phone_book.model.tokenizer", problems);
    }
  }

  void ApplyDefaults(v1::AuditSpec* spec) const override {
    ApplyRelationalDefaults(spec->mutable_relational());
  }

  void Validate(const v1::AuditSpec& spec, std::vector<SpecProblem>* problems) const override {
    ValidateRelational(spec.relational(), problems);
  }

  // Per variant and metric, "<variant>.<metric>.rm_norm" at the curve's
  // latest point: across replicates with its re-run interval when the audit
  // has them, else replicate 0's with its sampling interval.
  std::vector<GateMetric> GateMetrics(const v1::AuditSpec& spec) const override {
    std::vector<GateMetric> out;
    for (const std::string& variant : relational::Variants(spec.relational())) {
      for (const std::string& metric : relational::MetricNames(spec.relational())) {
        out.push_back(
            {absl::StrCat(variant, ".", metric, ".rm_norm"), "records or replicates",
             [variant, metric](const v1::AuditResults& r) -> std::optional<MetricReading> {
               const v1::RelationalPoint* latest = nullptr;
               for (const v1::RelationalCurve& c : r.relational().curves()) {
                 if (c.variant() != variant) continue;
                 for (const v1::RelationalPoint& p : c.points()) {
                   if (p.metric() == metric) latest = &p;
                 }
               }
               if (latest == nullptr) return std::nullopt;
               if (latest->has_across_replicates()) {
                 const v1::TrialMean& m = latest->across_replicates().rm_norm();
                 return ReadingOf(m.mean(), m.rerun_low(), m.rerun_high(), m.low(), m.high());
               }
               return MetricReading{latest->rm_norm(), latest->rm_norm_low(),
                                    latest->rm_norm_high()};
             }});
      }
    }
    return out;
  }

  std::vector<PlannedTask> Plan(const v1::AuditSpec& spec) const override {
    // One task per variant (phone-book width or linear d_x) and replicate, so
    // they run in parallel and each streams its own curve.
    std::vector<PlannedTask> tasks;
    const uint64_t steps = relational::TaskSteps(spec.relational());
    // Replicates follow as whole copies: task i is variant i % V of replicate
    // i / V (relational::Runs).
    const uint32_t runs = relational::Runs(spec.relational());
    for (uint32_t i = 0; i < runs; ++i) {
      tasks.push_back({relational::kTaskRole, i, steps});
    }
    return tasks;
  }
};

}  // namespace

}  // namespace memaudit::spec

namespace memaudit {

template <>
const spec::KindHandler& HandlerOfKind<spec::KindHandler, v1::AuditSpec::kRelational>() {
  static const spec::Relational handler;
  return handler;
}

}  // namespace memaudit
