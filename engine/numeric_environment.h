// What decides the bits this process trains: the device, the LibTorch
// release, and the CPU kernels ATen, oneDNN and OpenBLAS dispatch to (pinned
// in portable mode, common/training/numerics.h). A worker sends it with each task it
// completes; the audit's results list the environments that trained it
// (docs/engine.md, "Numerics"). Torch-free header.
#ifndef MEMAUDIT_ENGINE_NUMERIC_ENVIRONMENT_H_
#define MEMAUDIT_ENGINE_NUMERIC_ENVIRONMENT_H_

#include <string>

namespace memaudit::engine {

// One line, e.g. "cpu; LibTorch 1.13.0; ATen AVX2; oneDNN 2.6.3 avx2;
// OpenBLAS 0.3.21 Haswell". A part the process cannot tell is left out.
std::string NumericEnvironment();

}  // namespace memaudit::engine

#endif  // MEMAUDIT_ENGINE_NUMERIC_ENVIRONMENT_H_
