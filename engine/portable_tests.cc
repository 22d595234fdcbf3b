// Linked into the engine's test programs: they compute in portable numerics
// as memaudit-worker does by default (the program restarts itself with the
// environment that pins LibTorch's, oneDNN's and OpenBLAS's kernels,
// common/training/numerics.h), so a test's bits are a worker's on any x86-64 CPU
// with AVX2 and FMA, AVX-512 machines included.
#include "common/training/numerics.h"

namespace {

const bool kPortableNumerics = [] {
  memaudit::RestartWithPortableNumerics();
  return true;
}();

}  // namespace
