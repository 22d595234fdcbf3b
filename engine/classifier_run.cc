#include "engine/classifier_run.h"

#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "common/base/status_macros.h"
#include "common/base/steps.h"
#include "engine/data_parallel.h"
#include "engine/dataset.h"
#include "engine/device.h"
#include "engine/ensemble.h"
#include "engine/linear.h"
#include "engine/schedule.h"
#include "engine/signals.h"
#include "engine/torch_api.h"
#include "engine/trainer.h"

namespace memaudit::engine {
namespace {

absl::Status CheckSpec(const data::LabeledExamples& data, const ClassifierRunSpec& spec, size_t k) {
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
  if (a.model.has_value() != b.model.has_value() || a.hidden != b.hidden ||
      a.learning_rate != b.learning_rate || a.momentum != b.momentum ||
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

// The plain model's forward on one member's parameters: MlpModel's
// Linear per layer, ReLU between. Evaluating member by member
// makes the numbers independent of how many members trained together.
torch::Tensor MemberForward(const std::vector<torch::Tensor>& params, torch::Tensor x) {
  const size_t layers = params.size() / 2;
  for (size_t l = 0; l < layers; ++l) {
    x = Linear(x, params[2 * l], params[2 * l + 1]);
    if (l + 1 < layers) x = torch::relu(x);
  }
  return x;
}

// FromLabeledExamples(data, rows), kept for the next call with the same rows:
// every task of a membership audit evaluates on the same pool, so a worker
// converts it once, not once per task. One entry (the latest), shared by
// concurrent tasks; tensors are reference-counted, so a caller's copy stays
// valid when the entry is replaced.
TensorDataset CachedRows(const data::LabeledExamples& data, const std::vector<uint32_t>& rows) {
  static absl::Mutex mu(absl::kConstInit);
  struct Entry {
    const data::LabeledExamples* data = nullptr;
    std::vector<uint32_t> rows;
    TensorDataset tensors;
  };
  static auto* latest = new Entry();  // guarded by mu; never freed
  {
    absl::MutexLock lock(&mu);
    if (latest->data == &data && latest->rows == rows) return latest->tensors;
  }
  TensorDataset tensors = FromLabeledExamples(data, rows);
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

// Rows per forward pass when evaluating a CNN or TorchScript model.
constexpr int64_t kEvalBatch = 4096;

// One CNN or TorchScript model with the generic Trainer: the epochs of
// EpochSchedule over its training rows, then phi and loss on the evaluation
// rows in eval mode.
absl::StatusOr<ClassifierRunResult> RunOneModel(const data::LabeledExamples& data,
                                                const ClassifierRunSpec& spec,
                                                const StepCallback& on_step) {
  ModelSpec model = *spec.model;
  model.inputs = data.features;
  model.classes = data.classes;
  TrainerOptions options = SeededTrainerOptions({}, spec.threads, spec.init_seed);
  options.optimizer.kind = OptimizerKind::kMomentum;  // momentum 0 is plain SGD
  options.optimizer.learning_rate = spec.learning_rate;
  options.optimizer.momentum = spec.momentum;
  options.optimizer.weight_decay = spec.weight_decay;
  const uint64_t init = spec.init_seed;
  const ModelFactory factory = [model, init] { return BuildModel(model, init); };
  // On the devices the calling thread is pinned to: several (a task holding
  // several GPUs) train the model data-parallel, rank 0's replica evaluated;
  // one is the plain Trainer, bit for bit.
  MEMAUDIT_ASSIGN_OR_RETURN(std::unique_ptr<DataParallelTrainer> ranks,
                            DataParallelTrainer::Create(factory, options, ThreadDevices()));
  // The training rows in train_indices order, indexed 0..n-1 by the schedule.
  const TensorDataset train = FromLabeledExamples(data, spec.train_indices);
  std::vector<int64_t> positions(spec.train_indices.size());
  for (size_t i = 0; i < positions.size(); ++i) positions[i] = static_cast<int64_t>(i);
  const EpochSchedule schedule(std::move(positions), spec.batch_size, spec.order_seed);
  const uint64_t steps = schedule.steps_per_epoch() * spec.epochs;
  const TrainStepCallback step_done = [&](uint64_t done, double /*loss*/) {
    return !on_step || on_step(done);
  };
  absl::Status trained;
  try {
    trained = ranks->Train(train, schedule, steps, step_done);
  } catch (const c10::Error& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("model: training failed: ", e.what_without_backtrace()));
  }
  MEMAUDIT_RETURN_IF_ERROR(trained);

  Trainer& trainer = ranks->rank(0);
  Model& trained_model = trainer.model();
  trained_model.eval();
  torch::NoGradGuard no_grad;
  const torch::Device device = trainer.device();
  auto logits_of = [&](const TensorDataset& rows) -> absl::StatusOr<torch::Tensor> {
    std::vector<torch::Tensor> parts;
    for (int64_t begin = 0; begin < rows.size(); begin += kEvalBatch) {
      const int64_t end = std::min(rows.size(), begin + kEvalBatch);
      torch::Tensor out = trained_model.Forward(rows.x().slice(0, begin, end).to(device));
      if (out.dim() != 2 || out.size(0) != end - begin || out.size(1) != data.classes) {
        return absl::InvalidArgumentError(absl::StrCat(
            "model: returns shape [", absl::StrJoin(out.sizes(), ", "), "] for ", end - begin,
            " inputs; expected [", end - begin, ", ", data.classes, "] logits"));
      }
      parts.push_back(out.to(torch::kCPU));
    }
    return parts.empty() ? torch::empty({0, static_cast<int64_t>(data.classes)})
                         : torch::cat(parts, 0);
  };
  ClassifierRunResult result;
  result.steps = steps;
  if (!spec.eval_indices.empty()) {
    const TensorDataset eval = CachedRows(data, spec.eval_indices);
    MEMAUDIT_ASSIGN_OR_RETURN(torch::Tensor logits, logits_of(eval));
    const torch::Tensor phi = LogitScaledConfidence(logits, eval.y()).contiguous();
    const torch::Tensor loss = CrossEntropyPerExample(logits, eval.y()).contiguous();
    result.phi.assign(phi.data_ptr<double>(), phi.data_ptr<double>() + phi.numel());
    result.loss.assign(loss.data_ptr<double>(), loss.data_ptr<double>() + loss.numel());
  }
  MEMAUDIT_ASSIGN_OR_RETURN(torch::Tensor train_logits, logits_of(train));
  result.train_accuracy = Accuracy(train_logits, train.y());
  return result;
}

}  // namespace

absl::StatusOr<ClassifierRunResult> RunClassifier(const data::LabeledExamples& data,
                                                  const ClassifierRunSpec& spec,
                                                  const StepCallback& on_step) {
  MEMAUDIT_ASSIGN_OR_RETURN(auto results, RunClassifiers(data, {spec}, on_step));
  return std::move(results.front());
}

absl::StatusOr<std::vector<ClassifierRunResult>> RunClassifiers(
    const data::LabeledExamples& data, const std::vector<ClassifierRunSpec>& runs,
    const StepCallback& on_step) {
  if (runs.empty()) return absl::InvalidArgumentError("runs: empty");
  for (size_t k = 0; k < runs.size(); ++k) {
    MEMAUDIT_RETURN_IF_ERROR(CheckSpec(data, runs[k], k));
    MEMAUDIT_RETURN_IF_ERROR(CheckPackable(runs[0], runs[k], k));
  }
  const ClassifierRunSpec& recipe = runs[0];
  if (recipe.model.has_value()) {
    // No batched form: the models train one after another, and on_step
    // counts steps of the whole task.
    std::vector<ClassifierRunResult> results;
    uint64_t before = 0;
    for (const ClassifierRunSpec& run : runs) {
      MEMAUDIT_ASSIGN_OR_RETURN(ClassifierRunResult r, RunOneModel(data, run, [&](uint64_t done) {
                                  return !on_step || on_step(before + done);
                                }));
      before += r.steps;
      results.push_back(std::move(r));
    }
    return results;
  }

  if (ThreadDevices().size() > 1) {
    return absl::InvalidArgumentError(
        "devices: logistic regression and MLPs train as one batched ensemble on one device; "
        "data-parallel training across several is for cnn and torchscript models");
  }
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
    train = FromLabeledExamples(data, rows);
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
