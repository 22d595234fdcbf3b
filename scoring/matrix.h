// Dense row-major matrices used to pass per-model, per-example signals.
#ifndef MEMAUDIT_SCORING_MATRIX_H_
#define MEMAUDIT_SCORING_MATRIX_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace memaudit::scoring {

// rows × cols, row-major: element (r, c) lives at data[r * cols + c]. In the
// membership code a row is a model and a column an example.
template <typename T>
struct BasicMatrix {
  size_t rows = 0;
  size_t cols = 0;
  std::vector<T> data;

  BasicMatrix() = default;
  BasicMatrix(size_t r, size_t c, T fill = T()) : rows(r), cols(c), data(r * c, fill) {}
  BasicMatrix(size_t r, size_t c, std::vector<T> d) : rows(r), cols(c), data(std::move(d)) {}

  T at(size_t r, size_t c) const { return data[r * cols + c]; }
  T& at(size_t r, size_t c) { return data[r * cols + c]; }
  const T* row(size_t r) const { return data.data() + r * cols; }
  T* row(size_t r) { return data.data() + r * cols; }

  // data.size() must equal rows * cols; a hand-built struct can violate it.
  absl::Status CheckShape(const std::string& name) const {
    if (data.size() != rows * cols) {
      return absl::InvalidArgumentError(absl::StrCat(
          name, ": data.size() = ", data.size(), " must equal rows * cols = ", rows, " * ", cols));
    }
    return absl::OkStatus();
  }
};

using Matrix = BasicMatrix<double>;
// 1 = the example was in that model's training set, 0 = it was not.
using KeepMatrix = BasicMatrix<uint8_t>;

}  // namespace memaudit::scoring

#endif  // MEMAUDIT_SCORING_MATRIX_H_
