// In-memory examples as tensors: rows of x and y are examples. Classifier
// data (images, CSV tables, synthetic blobs) and language-model windows all
// end up here.
#ifndef MEMAUDIT_ENGINE_DATASET_H_
#define MEMAUDIT_ENGINE_DATASET_H_

#include <cstdint>
#include <vector>

#include "data/labeled_examples.h"
#include "engine/torch_api.h"

namespace memaudit::engine {

struct Batch {
  torch::Tensor x;
  torch::Tensor y;
};

// Rows ids of t (along dim 0), in order: one copy per row on CPU, where
// index_select goes element by element; index_select elsewhere. Each id
// must be in [0, t.size(0)).
torch::Tensor GatherRows(const torch::Tensor& t, const std::vector<int64_t>& ids);

class TensorDataset {
 public:
  TensorDataset() = default;
  TensorDataset(torch::Tensor x, torch::Tensor y) : x_(std::move(x)), y_(std::move(y)) {}
  int64_t size() const { return x_.defined() ? x_.size(0) : 0; }
  const torch::Tensor& x() const { return x_; }
  const torch::Tensor& y() const { return y_; }
  // Rows `ids` in that order (repeats allowed).
  Batch Gather(const std::vector<int64_t>& ids) const;
  // This dataset's rows followed by `other`'s (for D u Dp index spaces).
  TensorDataset Concat(const TensorDataset& other) const;

 private:
  torch::Tensor x_;
  torch::Tensor y_;
};

// Rows of `data` as float32 x [rows, features] and int64 y: uint8 pixels
// scaled to [0, 1] (v / 255.0f, as RunClassifier always has), float values
// copied unchanged.
TensorDataset FromLabeledExamples(const data::LabeledExamples& data,
                                  const std::vector<uint32_t>& rows);

// A synthetic classification task for tests: `classes` Gaussian blobs in
// `features` dimensions whose means differ by `separation`; pure function of seed.
TensorDataset SyntheticBlobs(int64_t count, int64_t features, int64_t classes, double separation,
                             uint64_t seed);

}  // namespace memaudit::engine

#endif  // MEMAUDIT_ENGINE_DATASET_H_
