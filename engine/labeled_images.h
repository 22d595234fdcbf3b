// Image classification data held as raw bytes, free of LibTorch types so that
// callers outside engine/ never include torch headers.
#ifndef MEMAUDIT_ENGINE_LABELED_IMAGES_H_
#define MEMAUDIT_ENGINE_LABELED_IMAGES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace memaudit::engine {

struct LabeledImages {
  uint32_t count = 0;
  // Pixels per image (28 * 28 for Fashion-MNIST).
  uint32_t features = 0;
  uint32_t classes = 0;
  // count * features bytes, row-major, 0..255.
  std::vector<uint8_t> pixels;
  std::vector<uint8_t> labels;
};

// Where Debian's dataset-fashion-mnist package installs the IDX files.
inline constexpr char kFashionMnistDir[] = "/usr/share/datasets/fashion-mnist";

// Reads an IDX file (gzip-compressed or plain): returns the dimensions and
// the raw unsigned-byte payload.
struct IdxArray {
  std::vector<uint32_t> dims;
  std::vector<uint8_t> data;
};
absl::StatusOr<IdxArray> ReadIdxFile(const std::string& path);

// Loads the training split ("train") or test split ("t10k") of an
// MNIST-layout directory. Results are cached per (dir, split) in the process.
absl::StatusOr<const LabeledImages*> LoadMnistLayout(const std::string& dir,
                                                     const std::string& split);

}  // namespace memaudit::engine

#endif  // MEMAUDIT_ENGINE_LABELED_IMAGES_H_
