#include "engine/classifier_run.h"

#include <torch/torch.h>

#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/status_macros.h"
#include "common/steps.h"
#include "engine/dataset.h"
#include "engine/ensemble.h"
#include "engine/signals.h"

namespace memaudit::engine {
namespace {

absl::Status CheckSpec(const LabeledImages& data, const ClassifierRunSpec& spec, size_t k) {
  if (spec.train_indices.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("runs[", k, "].train_indices: empty"));
  }
  if (spec.batch_size == 0) return absl::InvalidArgumentError("batch_size: must be > 0");
  for (const auto* indices : {&spec.train_indices, &spec.eval_indices}) {
    for (uint32_t i : *indices) {
      if (i >= data.count) {
        return absl::InvalidArgumentError(
            absl::StrCat("index ", i, " is outside the dataset of ", data.count));
      }
    }
  }
  return absl::OkStatus();
}

// An ensemble shares everything but the seeds and the training rows, and
// equal sizes keep every member's batches unpadded (padding is not exact).
absl::Status CheckPackable(const ClassifierRunSpec& a, const ClassifierRunSpec& b, size_t k) {
  if (a.hidden != b.hidden || a.learning_rate != b.learning_rate || a.momentum != b.momentum ||
      a.weight_decay != b.weight_decay || a.epochs != b.epochs || a.batch_size != b.batch_size ||
      a.threads != b.threads || a.eval_indices != b.eval_indices) {
    return absl::InvalidArgumentError(
        absl::StrCat("runs[", k, "]: differs from runs[0] in more than seeds and train_indices"));
  }
  if (a.train_indices.size() != b.train_indices.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "runs[", k, "].train_indices: ", b.train_indices.size(), " rows where runs[0] has ",
        a.train_indices.size(), "; only equal-size training sets train as one ensemble"));
  }
  return absl::OkStatus();
}

// The plain model's forward on one member's parameters: nn::Linear's
// addmm(b, x, W^T) per layer, ReLU between. Evaluating member by member
// makes the numbers independent of how many members trained together.
torch::Tensor MemberForward(const std::vector<torch::Tensor>& params, torch::Tensor x) {
  const size_t layers = params.size() / 2;
  for (size_t l = 0; l < layers; ++l) {
    x = torch::linear(x, params[2 * l], params[2 * l + 1]);
    if (l + 1 < layers) x = torch::relu(x);
  }
  return x;
}

// FromLabeledImages(data, rows), kept for the next call with the same rows:
// every task of a membership audit evaluates on the same pool, so a worker
// converts it once, not once per task. One entry (the latest), shared by
// concurrent tasks; tensors are reference-counted, so a caller's copy stays
// valid when the entry is replaced.
TensorDataset CachedRows(const LabeledImages& data, const std::vector<uint32_t>& rows) {
  static absl::Mutex mu(absl::kConstInit);
  struct Entry {
    const LabeledImages* data = nullptr;
    std::vector<uint32_t> rows;
    TensorDataset tensors;
  };
  static auto* latest = new Entry();  // guarded by mu; never freed
  {
    absl::MutexLock lock(&mu);
    if (latest->data == &data && latest->rows == rows) return latest->tensors;
  }
  TensorDataset tensors = FromLabeledImages(data, rows);
  absl::MutexLock lock(&mu);
  *latest = Entry{&data, rows, tensors};
  return tensors;
}

// Where each of `rows` sits in `indexed` (positions into it), or nothing
// when one of them is not there. `at`: row -> position in `indexed`, -1.
std::optional<std::vector<int64_t>> PositionsIn(const std::vector<int64_t>& at,
                                                const std::vector<uint32_t>& rows) {
  std::vector<int64_t> positions;
  positions.reserve(rows.size());
  for (uint32_t r : rows) {
    if (at[r] < 0) return std::nullopt;
    positions.push_back(at[r]);
  }
  return positions;
}

double Accuracy(const torch::Tensor& logits, const torch::Tensor& labels) {
  return logits.argmax(1).eq(labels).to(torch::kFloat64).mean().item<double>();
}

}  // namespace

absl::StatusOr<ClassifierRunResult> RunClassifier(const LabeledImages& data,
                                                  const ClassifierRunSpec& spec,
                                                  const StepCallback& on_step) {
  MEMAUDIT_ASSIGN_OR_RETURN(auto results, RunClassifiers(data, {spec}, on_step));
  return std::move(results.front());
}

absl::StatusOr<std::vector<ClassifierRunResult>> RunClassifiers(
    const LabeledImages& data, const std::vector<ClassifierRunSpec>& runs,
    const StepCallback& on_step) {
  if (runs.empty()) return absl::InvalidArgumentError("runs: empty");
  for (size_t k = 0; k < runs.size(); ++k) {
    MEMAUDIT_RETURN_IF_ERROR(CheckSpec(data, runs[k], k));
    MEMAUDIT_RETURN_IF_ERROR(CheckPackable(runs[0], runs[k], k));
  }
  const ClassifierRunSpec& recipe = runs[0];

  // One tensor holds the union of the members' training rows; each member's
  // pool lists its rows in train_indices order, the order EpochSchedule
  // permutes (as the single-model trainer always did).
  std::vector<uint32_t> rows;
  for (const ClassifierRunSpec& r : runs) {
    rows.insert(rows.end(), r.train_indices.begin(), r.train_indices.end());
  }
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  // The evaluation rows (a membership audit's pool) usually hold every
  // training row: then the training tensors are gathered from them, the
  // same floats without converting pixels again.
  TensorDataset eval;
  std::vector<int64_t> eval_at(data.count, -1);
  if (!recipe.eval_indices.empty()) eval = CachedRows(data, recipe.eval_indices);
  for (size_t i = 0; i < recipe.eval_indices.size(); ++i) {
    eval_at[recipe.eval_indices[i]] = static_cast<int64_t>(i);
  }
  const std::optional<std::vector<int64_t>> train_in_eval = PositionsIn(eval_at, rows);
  TensorDataset train;
  if (train_in_eval.has_value()) {
    Batch gathered = eval.Gather(*train_in_eval);
    train = TensorDataset(std::move(gathered.x), std::move(gathered.y));
  } else {
    train = FromLabeledImages(data, rows);
  }
  std::vector<EnsembleMember> members(runs.size());
  for (size_t k = 0; k < runs.size(); ++k) {
    members[k].init_seed = runs[k].init_seed;
    members[k].order_seed = runs[k].order_seed;
    for (uint32_t i : runs[k].train_indices) {
      members[k].pool.push_back(std::lower_bound(rows.begin(), rows.end(), i) - rows.begin());
    }
  }
  std::vector<std::vector<int64_t>> pools;
  for (const EnsembleMember& m : members) pools.push_back(m.pool);

  ModelSpec model;
  model.kind = recipe.hidden.empty() ? ModelKind::kLogReg : ModelKind::kMlp;
  model.inputs = data.features;
  model.classes = data.classes;
  model.hidden = recipe.hidden;
  TrainerOptions options;
  options.optimizer.kind = OptimizerKind::kMomentum;  // momentum 0 is plain SGD
  options.optimizer.learning_rate = recipe.learning_rate;
  options.optimizer.momentum = recipe.momentum;
  options.optimizer.weight_decay = recipe.weight_decay;
  options.threads = recipe.threads == 0 ? 1 : recipe.threads;
  MEMAUDIT_ASSIGN_OR_RETURN(
      auto trainer, EnsembleTrainer::Create(model, options, std::move(members), recipe.batch_size));

  const uint64_t steps =
      StepsPerEpoch(recipe.train_indices.size(), recipe.batch_size) * recipe.epochs;
  for (uint64_t done = 1; done <= steps; ++done) {
    MEMAUDIT_RETURN_IF_ERROR(trainer->Train(train, done));
    if (on_step && !on_step(done)) {
      return absl::CancelledError(absl::StrCat("stopped after ", done, " steps"));
    }
  }

  torch::NoGradGuard no_grad;
  std::vector<ClassifierRunResult> results(runs.size());
  for (size_t k = 0; k < runs.size(); ++k) {
    ClassifierRunResult& result = results[k];
    result.steps = steps;
    // Fresh copies: member k's weights sit at an offset in the stacked
    // tensors that depends on k; its evaluation must not.
    std::vector<torch::Tensor> params;
    for (const torch::Tensor& p : trainer->model().MemberParameters(static_cast<int64_t>(k))) {
      params.push_back(p.detach().clone());
    }
    torch::Tensor logits;
    if (eval.size() > 0) {
      logits = MemberForward(params, eval.x());
      torch::Tensor phi = LogitScaledConfidence(logits, eval.y()).contiguous();
      torch::Tensor loss = CrossEntropyPerExample(logits, eval.y()).contiguous();
      result.phi.assign(phi.data_ptr<double>(), phi.data_ptr<double>() + phi.numel());
      result.loss.assign(loss.data_ptr<double>(), loss.data_ptr<double>() + loss.numel());
    }
    // The member's own rows: their logits are among the evaluation's when
    // every training row is (a forward pass saved), else computed here.
    if (train_in_eval.has_value()) {
      std::vector<int64_t> own;
      own.reserve(pools[k].size());
      for (int64_t p : pools[k]) own.push_back((*train_in_eval)[p]);
      const torch::Tensor index = torch::tensor(own, torch::kLong);
      result.train_accuracy =
          Accuracy(logits.index_select(0, index), eval.y().index_select(0, index));
    } else {
      const Batch own = train.Gather(pools[k]);
      result.train_accuracy = Accuracy(MemberForward(params, own.x), own.y);
    }
  }
  return results;
}

}  // namespace memaudit::engine
