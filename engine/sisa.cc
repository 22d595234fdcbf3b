#include "engine/sisa.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "common/base/seeding.h"
#include "common/base/status_macros.h"
#include "common/base/steps.h"
#include "common/training/sisa_layout.h"

namespace memaudit::engine {

SisaLayout BuildSisaLayout(const std::vector<int64_t>& pool, uint32_t shards, uint32_t slices,
                           uint64_t seed) {
  const SisaSlices cut = SisaLayoutOf(static_cast<uint32_t>(pool.size()), shards, slices, seed);
  SisaLayout layout;
  layout.rows.assign(shards, std::vector<std::vector<int64_t>>(slices));
  for (uint32_t s = 0; s < shards; ++s) {
    for (uint32_t k = 0; k < slices; ++k) {
      for (uint32_t i : cut[s][k]) layout.rows[s][k].push_back(pool[i]);
    }
  }
  return layout;
}

absl::StatusOr<std::unique_ptr<SisaEnsemble>> SisaEnsemble::Create(const ModelSpec& spec,
                                                                   const TrainerOptions& options,
                                                                   SisaLayout layout,
                                                                   const SisaOptions& sisa) {
  if (layout.rows.empty()) return absl::InvalidArgumentError("layout: no shards");
  if (sisa.batch_size == 0) return absl::InvalidArgumentError("sisa.batch_size: must be > 0");
  std::unique_ptr<SisaEnsemble> e(new SisaEnsemble());
  for (uint32_t s = 0; s < layout.rows.size(); ++s) {
    if (layout.rows[s].empty()) {
      return absl::InvalidArgumentError(absl::StrCat("layout.rows[", s, "]: no slices"));
    }
    const uint64_t init = DeriveSeed(sisa.seed, "sisa.init", s);
    MEMAUDIT_ASSIGN_OR_RETURN(
        auto t, Trainer::Create([spec, init] { return BuildModel(spec, init); }, options));
    MEMAUDIT_ASSIGN_OR_RETURN(std::string ckpt, t->Serialize());
    e->checkpoints_.push_back({ckpt});
    e->shards_.push_back(std::move(t));
  }
  e->layout_ = std::move(layout);
  e->sisa_ = sisa;
  e->steps_trained_.assign(e->shards_.size(), 0);
  return e;
}

absl::Status SisaEnsemble::TrainShardFrom(const TensorDataset& data, uint32_t s, uint32_t from) {
  Trainer& t = *shards_[s];
  MEMAUDIT_RETURN_IF_ERROR(t.Restore(checkpoints_[s][from]));
  checkpoints_[s].resize(from + 1);
  std::vector<int64_t> seen;
  for (uint32_t k = 0; k < from; ++k) {
    seen.insert(seen.end(), layout_.rows[s][k].begin(), layout_.rows[s][k].end());
  }
  for (uint32_t k = from; k < layout_.rows[s].size(); ++k) {
    seen.insert(seen.end(), layout_.rows[s][k].begin(), layout_.rows[s][k].end());
    if (!seen.empty()) {
      // Slice k trains on the union of slices 0..k, with an order that is a
      // function of (seed, shard, slice) only. Each epoch sorts the rows by a
      // seeded per-row key, so deleting a row leaves the others' order as it
      // was: a retrained shard differs from the original by the deletion
      // alone, not by a reshuffle (which would drown the deletion's effect).
      const uint64_t order_seed = DeriveSeed(sisa_.seed, "sisa.order", s * 1000003ull + k);
      const uint64_t batch = sisa_.batch_size;
      const uint64_t per_epoch = StepsPerEpoch(seen.size(), batch);
      for (uint32_t e = 0; e < sisa_.epochs_per_slice; ++e) {
        const uint64_t epoch_seed = DeriveSeed(order_seed, "epoch", e);
        std::vector<std::pair<uint64_t, int64_t>> keyed;
        keyed.reserve(seen.size());
        for (int64_t r : seen) keyed.push_back({DeriveSeed(epoch_seed, "row", r), r});
        std::sort(keyed.begin(), keyed.end());
        for (uint64_t b = 0; b < per_epoch; ++b) {
          std::vector<int64_t> ids;
          for (uint64_t i = b * batch; i < std::min<uint64_t>((b + 1) * batch, keyed.size()); ++i) {
            ids.push_back(keyed[i].second);
          }
          MEMAUDIT_RETURN_IF_ERROR(t.Step(data.Gather(ids)).status());
        }
      }
      steps_trained_[s] += sisa_.epochs_per_slice * per_epoch;
    }
    MEMAUDIT_ASSIGN_OR_RETURN(std::string ckpt, t.Serialize());
    checkpoints_[s].push_back(std::move(ckpt));
  }
  return absl::OkStatus();
}

absl::Status SisaEnsemble::TrainAll(const TensorDataset& data) {
  for (uint32_t s = 0; s < shards_.size(); ++s) {
    MEMAUDIT_RETURN_IF_ERROR(TrainShardFrom(data, s, 0));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<uint32_t>> SisaEnsemble::Delete(const TensorDataset& data,
                                                           const std::vector<int64_t>& rows) {
  const std::set<int64_t> doomed(rows.begin(), rows.end());
  std::vector<uint32_t> retrained;
  size_t removed = 0;
  for (uint32_t s = 0; s < shards_.size(); ++s) {
    int64_t first = -1;
    for (uint32_t k = 0; k < layout_.rows[s].size(); ++k) {
      auto& slice = layout_.rows[s][k];
      const size_t before = slice.size();
      slice.erase(std::remove_if(slice.begin(), slice.end(),
                                 [&](int64_t r) { return doomed.count(r) > 0; }),
                  slice.end());
      if (slice.size() != before && first < 0) first = k;
      removed += before - slice.size();
    }
    if (first < 0) continue;
    MEMAUDIT_RETURN_IF_ERROR(TrainShardFrom(data, s, static_cast<uint32_t>(first)));
    retrained.push_back(s);
  }
  if (removed < doomed.size()) {
    return absl::NotFoundError(
        absl::StrCat("rows: ", doomed.size() - removed, " of them are in no shard"));
  }
  return retrained;
}

absl::StatusOr<uint32_t> SisaEnsemble::Add(const TensorDataset& data,
                                           const std::vector<int64_t>& rows) {
  if (rows.empty()) return absl::InvalidArgumentError("rows: empty");
  uint32_t target = 0;
  size_t smallest = SIZE_MAX;
  for (uint32_t s = 0; s < layout_.rows.size(); ++s) {
    size_t size = 0;
    for (const auto& slice : layout_.rows[s]) size += slice.size();
    if (size < smallest) {
      smallest = size;
      target = s;
    }
  }
  auto& last = layout_.rows[target].back();
  last.insert(last.end(), rows.begin(), rows.end());
  const uint32_t from = static_cast<uint32_t>(layout_.rows[target].size() - 1);
  MEMAUDIT_RETURN_IF_ERROR(TrainShardFrom(data, target, from));
  return target;
}

absl::StatusOr<std::unique_ptr<SisaEnsemble>> SisaEnsemble::Fork() const {
  std::unique_ptr<SisaEnsemble> e(new SisaEnsemble());
  for (const auto& t : shards_) {
    MEMAUDIT_ASSIGN_OR_RETURN(std::unique_ptr<Trainer> copy, t->Fork());
    e->shards_.push_back(std::move(copy));
  }
  e->layout_ = layout_;
  e->sisa_ = sisa_;
  e->checkpoints_ = checkpoints_;
  e->steps_trained_ = steps_trained_;
  return e;
}

torch::Tensor SisaEnsemble::Posteriors(const torch::Tensor& x) {
  torch::NoGradGuard no_grad;
  torch::Tensor sum;
  for (auto& t : shards_) {
    t->model().eval();
    torch::Tensor p = torch::softmax(t->model().Forward(x.to(t->device())).to(torch::kFloat64), 1);
    sum = sum.defined() ? sum + p : p;
  }
  return (sum / static_cast<double>(shards_.size())).cpu();
}

}  // namespace memaudit::engine
