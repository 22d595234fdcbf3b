// The device engine trains on when a run names none ("" in TrainerOptions and
// the facades' specs): CPU unless the process says otherwise, once, at start
// (the worker's --device); and the precision of CUDA products. Torch-free,
// so services can set them.
#ifndef MEMAUDIT_ENGINE_DEVICE_H_
#define MEMAUDIT_ENGINE_DEVICE_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace memaudit::engine {

// `name`: "cpu", "cuda", "cuda:N", or "auto" (CUDA when available, else
// CPU). INVALID_ARGUMENT for another name, FAILED_PRECONDITION for CUDA on
// a machine without it. Returns the device chosen.
absl::StatusOr<std::string> SetDefaultDevice(const std::string& name);

// The device runs train on when they name none: the calling thread's (below)
// where it has one, else the process default.
std::string DefaultDevice();

// The CUDA devices this machine has (0 without CUDA).
int CudaDeviceCount();

// Pins the calling thread's runs to `devices` (each "cpu" or "cuda:N"; none
// unpins): a worker offering several GPUs runs each task on a thread pinned
// to GPUs of its own. A run that trains one model trains it on the first,
// or data-parallel across all of them where there are several
// (engine/data_parallel.h). INVALID_ARGUMENT for another name,
// FAILED_PRECONDITION for a CUDA device the machine lacks.
absl::Status SetThreadDevices(const std::vector<std::string>& devices);

// The calling thread's devices; without a pin, the default device alone.
std::vector<std::string> ThreadDevices();

// How CUDA runs the float32 products of training and evaluation, chosen
// once per process (the worker's --matmul-precision). Every tensor stays
// float32; what changes is the arithmetic inside the products:
//   kFp32: IEEE float32 (the default; TF32 is turned off for cuBLAS and
//          cuDNN, which LibTorch would otherwise use for convolutions).
//   kTf32: TensorFloat-32 tensor cores (10-bit mantissa inputs, float32
//          accumulation) for matrix products and convolutions.
//   kBf16: the fully connected layers' products on bfloat16 inputs (float32
//          weights, gradients and accumulation), convolutions in TF32.
// On CPU every precision runs float32, so tf32 and bf16 need a CUDA device.
enum class MatmulPrecision { kFp32, kTf32, kBf16 };

// `name`: "fp32", "tf32" or "bf16". INVALID_ARGUMENT for another name,
// FAILED_PRECONDITION for tf32/bf16 while the default device is the CPU
// (set the device first).
absl::Status SetMatmulPrecision(const std::string& name);
MatmulPrecision CurrentMatmulPrecision();

// Sets LibTorch's process-wide TF32 switches to the current precision;
// called wherever a run places a model on CUDA.
void ApplyMatmulPrecision();

}  // namespace memaudit::engine

#endif  // MEMAUDIT_ENGINE_DEVICE_H_
