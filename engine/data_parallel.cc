#include "engine/data_parallel.h"

#include <chrono>
#include <functional>
#include <set>
#include <stdexcept>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/base/seeding.h"
#include "common/base/status_macros.h"

// Gloo's headers come with LibTorch's (PyTorch's wheels) or as Debian's
// libgloo-dev; NCCL's process group exists where LibTorch was built with it
// and NCCL's header is on the include path (PyTorch's wheels keep it in
// another package: engine/CMakeLists.txt finds it). Without them the engine
// builds and refuses those ranks.
#if defined(USE_C10D_GLOO) && __has_include(<gloo/algorithm.h>) && \
    __has_include(<torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>)
#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#define MEMAUDIT_HAVE_GLOO 1
#endif
#if defined(USE_C10D_NCCL) && !defined(MEMAUDIT_WITHOUT_NCCL) && __has_include(<nccl.h>) && \
    __has_include(<torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>)
#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#define MEMAUDIT_HAVE_NCCL 1
#endif
#if defined(MEMAUDIT_EXPECT_NCCL) && !defined(MEMAUDIT_HAVE_NCCL)
#error "NCCL's process group is not compiled (scripts/check.sh nccl asked for it)"
#endif

namespace memaudit::engine {
namespace {

constexpr size_t kMaxRanks = 64;

using AllReduce = std::function<void(std::vector<at::Tensor>&)>;

// An all-reduce that failed: on its own rank a symptom (a peer stopped, or
// the collective timed out waiting for it), not the cause.
class CollectiveFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Rank r's gradients, weighted by its share of the batch, summed over the
// ranks in one flat buffer (one collective per step).
void ReduceGradients(Model& model, double weight, const AllReduce& all_reduce) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> params;
  std::vector<torch::Tensor> parts;
  for (torch::Tensor& p : model.parameters()) {
    if (!p.requires_grad()) continue;
    if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
    params.push_back(p);
    parts.push_back(p.grad().reshape({-1}));
  }
  if (params.empty()) return;
  std::vector<at::Tensor> flat{torch::cat(parts).mul_(weight)};
  try {
    all_reduce(flat);
  } catch (const c10::Error& e) {
    throw CollectiveFailure(e.what_without_backtrace());
  } catch (const std::exception& e) {
    throw CollectiveFailure(e.what());
  }
  int64_t offset = 0;
  for (torch::Tensor& p : params) {
    p.mutable_grad().copy_(flat[0].narrow(0, offset, p.numel()).view_as(p));
    offset += p.numel();
  }
}

// Runs fn(r) for every rank on a thread of its own. The error returned is a
// rank's own (the first in rank order), before the all-reduce failures it
// caused on the others: a device that fails gives its own error (a CUDA
// error is retried elsewhere, services/worker/failure_kind.h), and only when
// every failure is a collective's is the step UNAVAILABLE (the task is
// released, no attempt spent).
absl::Status OnEveryRank(int ranks, const std::function<absl::Status(int)>& fn) {
  std::vector<absl::Status> status(ranks);
  std::vector<std::thread> threads;
  threads.reserve(ranks);
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      try {
        status[r] = fn(r);
      } catch (const CollectiveFailure& e) {
        status[r] = absl::UnavailableError(absl::StrCat(
            "rank ", r, ": the all-reduce failed (another rank stopped?): ", e.what()));
      } catch (const c10::Error& e) {
        status[r] = absl::InternalError(absl::StrCat("rank ", r, ": ", e.what_without_backtrace()));
      } catch (const std::exception& e) {
        status[r] = absl::InternalError(absl::StrCat("rank ", r, ": ", e.what()));
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const absl::Status& s : status) {
    if (!s.ok() && s.code() != absl::StatusCode::kUnavailable) return s;
  }
  for (const absl::Status& s : status) MEMAUDIT_RETURN_IF_ERROR(s);
  return absl::OkStatus();
}

}  // namespace

// One process group per rank, joined through one in-process store.
struct DataParallelGroups {
  std::vector<AllReduce> all_reduce;
#ifdef MEMAUDIT_HAVE_GLOO
  std::vector<c10::intrusive_ptr<c10d::ProcessGroupGloo>> gloo;
#endif
#ifdef MEMAUDIT_HAVE_NCCL
  std::vector<c10::intrusive_ptr<c10d::ProcessGroupNCCL>> nccl;
#endif
};

namespace {

absl::Status JoinGloo(int ranks, std::chrono::milliseconds timeout, DataParallelGroups& groups) {
#ifdef MEMAUDIT_HAVE_GLOO
  auto& gloo = groups.gloo;
  gloo.resize(ranks);
  auto store = c10::make_intrusive<c10d::HashStore>();
  // Each constructor waits for every rank to connect: all at once.
  MEMAUDIT_RETURN_IF_ERROR(OnEveryRank(ranks, [&](int r) {
    auto options = c10d::ProcessGroupGloo::Options::create(timeout);
    options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
    gloo[r] = c10::make_intrusive<c10d::ProcessGroupGloo>(store, r, ranks, options);
    return absl::OkStatus();
  }));
  for (int r = 0; r < ranks; ++r) {
    c10d::ProcessGroupGloo* group = gloo[r].get();
    groups.all_reduce[r] = [group](std::vector<at::Tensor>& t) { group->allreduce(t)->wait(); };
  }
  return absl::OkStatus();
#else
  (void)ranks, (void)timeout, (void)groups;
  return absl::UnimplementedError(
      "devices: data-parallel CPU ranks need LibTorch with Gloo and Gloo's headers");
#endif
}

absl::Status JoinNccl(int ranks, std::chrono::milliseconds timeout, DataParallelGroups& groups) {
#ifdef MEMAUDIT_HAVE_NCCL
  auto& nccl = groups.nccl;
  nccl.resize(ranks);
  auto store = c10::make_intrusive<c10d::HashStore>();
  for (int r = 0; r < ranks; ++r) {
    auto options = c10d::ProcessGroupNCCL::Options::create();
    options->timeout = timeout;
    nccl[r] = c10::make_intrusive<c10d::ProcessGroupNCCL>(store, r, ranks, options);
    c10d::ProcessGroupNCCL* group = nccl[r].get();
    groups.all_reduce[r] = [group](std::vector<at::Tensor>& t) { group->allreduce(t)->wait(); };
  }
  return absl::OkStatus();
#else
  (void)ranks, (void)timeout, (void)groups;
  return absl::UnimplementedError("devices: data-parallel CUDA ranks need LibTorch with NCCL");
#endif
}

}  // namespace

DataParallelTrainer::~DataParallelTrainer() = default;

absl::StatusOr<std::unique_ptr<DataParallelTrainer>> DataParallelTrainer::Create(
    const ModelFactory& factory, const TrainerOptions& options,
    const std::vector<std::string>& devices, std::chrono::milliseconds collective_timeout) {
  if (devices.empty() || devices.size() > kMaxRanks) {
    return absl::InvalidArgumentError(
        absl::StrCat("devices: 1 to ", kMaxRanks, " ranks (got ", devices.size(), ")"));
  }
  if (options.dp.enabled) {
    return absl::InvalidArgumentError(
        "devices: data-parallel training does not run DP-SGD (each rank would add its own "
        "noise); train on one device");
  }
  std::set<std::string> cuda;
  size_t cpu = 0;
  for (const std::string& name : devices) {
    MEMAUDIT_ASSIGN_OR_RETURN(torch::Device device, ParseDevice(name));
    if (device.is_cpu()) {
      ++cpu;
    } else if (device.is_cuda()) {
      cuda.insert(device.str());
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("devices: ", name, " is neither cpu nor cuda"));
    }
  }
  if (cpu != 0 && cpu != devices.size()) {
    return absl::InvalidArgumentError("devices: all CPU ranks or all CUDA ranks, not both");
  }
  if (cpu == 0 && cuda.size() != devices.size()) {
    return absl::InvalidArgumentError("devices: each CUDA rank needs a device of its own");
  }
  const int ranks = static_cast<int>(devices.size());
  std::unique_ptr<DataParallelTrainer> t(new DataParallelTrainer());
  for (int r = 0; r < ranks; ++r) {
    TrainerOptions rank_options = options;
    rank_options.device = devices[r];
    if (r > 0) rank_options.dropout_seed = DeriveSeed(options.dropout_seed, "rank", r);
    MEMAUDIT_ASSIGN_OR_RETURN(std::unique_ptr<Trainer> trainer,
                              Trainer::Create(factory, rank_options));
    t->ranks_.push_back(std::move(trainer));
  }
  t->shard_weight_.assign(ranks, 1.0);
  if (ranks == 1) return t;
  t->groups_ = std::make_unique<DataParallelGroups>();
  t->groups_->all_reduce.resize(ranks);
  try {
    MEMAUDIT_RETURN_IF_ERROR(cpu != 0 ? JoinGloo(ranks, collective_timeout, *t->groups_)
                                      : JoinNccl(ranks, collective_timeout, *t->groups_));
  } catch (const c10::Error& e) {
    return absl::UnavailableError(
        absl::StrCat("devices: the ranks could not connect: ", e.what_without_backtrace()));
  }
  for (int r = 0; r < ranks; ++r) {
    DataParallelTrainer* self = t.get();
    t->ranks_[r]->set_gradient_reducer([self, r](Model& model) {
      ReduceGradients(model, self->shard_weight_[r], self->groups_->all_reduce[r]);
    });
  }
  return t;
}

absl::StatusOr<double> DataParallelTrainer::Step(const Batch& batch, bool advance_lr) {
  const int ranks = world_size();
  if (ranks == 1) return ranks_[0]->Step(batch, advance_lr);
  const int64_t rows = batch.x.defined() ? batch.x.size(0) : 0;
  if (rows < ranks) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch: ", rows, " rows for ", ranks, " ranks; each rank needs one"));
  }
  std::vector<Batch> shards(ranks);
  for (int r = 0; r < ranks; ++r) {
    const int64_t begin = r * rows / ranks, end = (r + 1) * rows / ranks;
    shards[r] = {batch.x.narrow(0, begin, end - begin), batch.y.narrow(0, begin, end - begin)};
    shard_weight_[r] = static_cast<double>(end - begin) / static_cast<double>(rows);
  }
  std::vector<double> losses(ranks, 0.0);
  MEMAUDIT_RETURN_IF_ERROR(OnEveryRank(ranks, [&](int r) -> absl::Status {
    MEMAUDIT_ASSIGN_OR_RETURN(losses[r], ranks_[r]->Step(shards[r], advance_lr));
    return absl::OkStatus();
  }));
  double loss = 0;
  for (int r = 0; r < ranks; ++r) loss += shard_weight_[r] * losses[r];
  return loss;
}

absl::Status DataParallelTrainer::Train(const TensorDataset& data, const BatchSchedule& schedule,
                                        uint64_t until_step, const TrainStepCallback& on_step) {
  return TrainOnSchedule(
      data, schedule, until_step, [this] { return step(); },
      [this](const Batch& batch, bool advance_lr) { return Step(batch, advance_lr); }, on_step);
}

}  // namespace memaudit::engine
