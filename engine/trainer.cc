#include "engine/trainer.h"

#include <ATen/CPUGeneratorImpl.h>

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/base/seeding.h"
#include "common/base/status_macros.h"
#include "engine/device.h"
#include "engine/optimizer.h"

namespace memaudit::engine {

absl::StatusOr<torch::Device> ParseDevice(const std::string& name) {
  try {
    torch::Device device(name.empty() ? DefaultDevice() : name);
    if (device.is_cuda() && !torch::cuda::is_available()) {
      return absl::FailedPreconditionError(absl::StrCat("device: ", name, " but CUDA is absent"));
    }
    if (device.is_cuda()) ApplyMatmulPrecision();
    return device;
  } catch (const c10::Error& e) {
    return absl::InvalidArgumentError(absl::StrCat("device: cannot parse '", name, "'"));
  }
}

Trainer::Trainer(ModelFactory factory, TrainerOptions options, torch::Device device)
    : factory_(std::move(factory)),
      options_(std::move(options)),
      device_(device),
      dropout_gen_(at::make_generator<at::CPUGeneratorImpl>(
          DeriveSeed(options_.dropout_seed, "dropout", 0))),
      noise_gen_(at::make_generator<at::CPUGeneratorImpl>(
          DeriveSeed(options_.dp.noise_seed, "dp_noise", 0))) {}

absl::StatusOr<std::unique_ptr<Trainer>> Trainer::Create(ModelFactory factory,
                                                         TrainerOptions options) {
  MEMAUDIT_RETURN_IF_ERROR(ValidateOptimizer(options.optimizer, options.schedule));
  if (options.dp.enabled && !(options.dp.clip_norm > 0)) {
    return absl::InvalidArgumentError("dp.clip_norm: must be > 0");
  }
  if (options.dp.enabled && options.dp.noise_multiplier < 0) {
    return absl::InvalidArgumentError("dp.noise_multiplier: must be >= 0");
  }
  MEMAUDIT_ASSIGN_OR_RETURN(torch::Device device, ParseDevice(options.device));
  if (options.threads > 0) torch::set_num_threads(static_cast<int>(options.threads));
  MEMAUDIT_ASSIGN_OR_RETURN(std::shared_ptr<Model> model, factory());
  std::unique_ptr<Trainer> t(new Trainer(std::move(factory), std::move(options), device));
  t->model_ = std::move(model);
  t->model_->to(device);
  t->model_->set_dropout_generator(&t->dropout_gen_);
  MEMAUDIT_ASSIGN_OR_RETURN(std::unique_ptr<torch::optim::Optimizer> opt,
                            MakeOptimizer(t->model_->parameters(), t->options_.optimizer));
  t->optimizer_ = std::move(opt);
  return t;
}

absl::StatusOr<double> Trainer::Step(const Batch& batch, bool advance_lr) {
  if (!batch.x.defined() || batch.x.size(0) == 0) {
    return absl::InvalidArgumentError("batch: empty");
  }
  model_->train();
  torch::Tensor x = batch.x.to(device_), y = batch.y.to(device_);
  SetLearningRate(*optimizer_, LearningRateAt(options_.optimizer, options_.schedule, lr_step_));
  optimizer_->zero_grad();
  double loss_value;
  if (options_.dp.enabled) {
    dp_stats_ = PrivateGradient(*model_, {x, y}, options_.dp, noise_gen_);
    loss_value = dp_stats_.loss;
  } else {
    torch::Tensor loss = model_->BatchLoss(x, y);
    loss.backward();
    loss_value = loss.item<double>();
  }
  if (gradient_reducer_) gradient_reducer_(*model_);
  if (gradient_hook_) gradient_hook_(*model_, dp_stats_, x.size(0));
  OptimizerStep(*optimizer_);
  ++step_;
  if (advance_lr) ++lr_step_;
  return loss_value;
}

absl::Status TrainOnSchedule(
    const TensorDataset& data, const BatchSchedule& schedule, uint64_t until_step,
    const std::function<uint64_t()>& steps_done,
    const std::function<absl::StatusOr<double>(const Batch&, bool advance_lr)>& step,
    const TrainStepCallback& on_step) {
  while (steps_done() < until_step) {
    BatchPlan plan = schedule.At(steps_done());
    for (int64_t id : plan.ids) {
      if (id < 0 || id >= data.size()) {
        return absl::InvalidArgumentError(
            absl::StrCat("schedule: row ", id, " is outside the dataset of ", data.size()));
      }
    }
    MEMAUDIT_ASSIGN_OR_RETURN(double loss, step(data.Gather(plan.ids), plan.advance_lr));
    if (on_step && !on_step(steps_done(), loss)) {
      return absl::CancelledError(absl::StrCat("stopped after ", steps_done(), " steps"));
    }
  }
  return absl::OkStatus();
}

absl::Status Trainer::Train(const TensorDataset& data, const BatchSchedule& schedule,
                            uint64_t until_step, const TrainStepCallback& on_step) {
  return TrainOnSchedule(
      data, schedule, until_step, [this] { return step_; },
      [this](const Batch& batch, bool advance_lr) { return Step(batch, advance_lr); }, on_step);
}

absl::StatusOr<std::string> Trainer::Serialize() const {
  try {
    torch::serialize::OutputArchive archive, model_archive, optim_archive;
    model_->save(model_archive);
    optimizer_->save(optim_archive);
    archive.write("model", model_archive);
    archive.write("optimizer", optim_archive);
    archive.write("step", torch::tensor(static_cast<int64_t>(step_)));
    archive.write("lr_step", torch::tensor(static_cast<int64_t>(lr_step_)));
    archive.write("dropout_rng", dropout_gen_.get_state());
    archive.write("noise_rng", noise_gen_.get_state());
    std::ostringstream out;
    archive.save_to(out);
    return out.str();
  } catch (const c10::Error& e) {
    return absl::InternalError(absl::StrCat("checkpoint: ", e.what_without_backtrace()));
  }
}

absl::Status Trainer::Restore(const std::string& bytes) {
  try {
    std::istringstream in(bytes);
    torch::serialize::InputArchive archive, model_archive, optim_archive;
    archive.load_from(in, device_);
    archive.read("model", model_archive);
    archive.read("optimizer", optim_archive);
    model_->load(model_archive);
    optimizer_->load(optim_archive);
    torch::Tensor step, lr_step, dropout_rng, noise_rng;
    archive.read("step", step);
    archive.read("lr_step", lr_step);
    archive.read("dropout_rng", dropout_rng);
    archive.read("noise_rng", noise_rng);
    step_ = static_cast<uint64_t>(step.item<int64_t>());
    lr_step_ = static_cast<uint64_t>(lr_step.item<int64_t>());
    dropout_gen_.set_state(dropout_rng.cpu());
    noise_gen_.set_state(noise_rng.cpu());
    return absl::OkStatus();
  } catch (const c10::Error& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("checkpoint: does not match this trainer: ", e.what_without_backtrace()));
  }
}

absl::Status Trainer::Save(const std::string& path) const {
  MEMAUDIT_ASSIGN_OR_RETURN(std::string bytes, Serialize());
  // Write then rename so a crash never leaves a torn checkpoint behind.
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out.good()) return absl::UnavailableError(absl::StrCat("checkpoint: cannot write ", tmp));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return absl::UnavailableError(absl::StrCat("checkpoint: cannot rename to ", path));
  }
  return absl::OkStatus();
}

absl::Status Trainer::Load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("checkpoint: cannot open ", path));
  std::ostringstream buf;
  buf << in.rdbuf();
  return Restore(buf.str());
}

absl::StatusOr<std::unique_ptr<Trainer>> Trainer::Fork() const {
  MEMAUDIT_ASSIGN_OR_RETURN(std::string bytes, Serialize());
  MEMAUDIT_ASSIGN_OR_RETURN(std::unique_ptr<Trainer> copy, Create(factory_, options_));
  MEMAUDIT_RETURN_IF_ERROR(copy->Restore(bytes));
  return copy;
}

}  // namespace memaudit::engine
