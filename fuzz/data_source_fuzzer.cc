// Fuzzes the dataset readers a team's files go through (data/): the same
// bytes as a CSV table, as a .npy array (paired with labels of its row count,
// so the value conversions and checks run) and as an .npz archive.
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "data/csv_reader.h"
#include "data/npy_reader.h"
#include "data/npz_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace memaudit::data;  // NOLINT
  const absl::string_view bytes(reinterpret_cast<const char*>(data), size);
  (void)ParseCsv(bytes, "fuzz.csv", "label");
  (void)ParseNpz(bytes, "fuzz.npz", "x", "y");
  absl::StatusOr<NpyArray> array = ParseNpy(bytes, "path: fuzz.npy");
  if (!array.ok()) return 0;
  // The array as its own labels, then with valid labels of its row count.
  (void)ExamplesFromNpy(*array, "path: fuzz.npy", *array, "labels_path: fuzz.npy");
  if (array->shape.empty() || array->shape[0] > (1u << 16)) return 0;
  const std::string label_bytes(array->shape[0], '\x01');
  NpyArray labels;
  labels.dtype = NpyDtype::kUint8;
  labels.descr = "|u1";
  labels.shape = {array->shape[0]};
  labels.data = label_bytes;
  (void)ExamplesFromNpy(*array, "path: fuzz.npy", labels, "labels_path: labels.npy");
  return 0;
}
