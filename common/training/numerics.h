// How CPU training computes, and which workers compute alike (docs/engine.md,
// "Numerics"). LibTorch (ATen), oneDNN and OpenBLAS each pick their kernels
// from the CPU they run on, and kernels for other instruction sets round
// differently: the same spec and seed would train other bits on another CPU
// type. In portable mode a process pins all three to their AVX2 kernels
// before it loads them, so every x86-64 CPU with AVX2 and FMA (Haswell, AMD
// Zen and newer) computes the same bits. In native mode they pick the
// machine's fastest kernels, and a worker's numeric class names what decides
// its bits: the CPU model and any ISA cap its environment sets.
#ifndef MEMAUDIT_COMMON_TRAINING_NUMERICS_H_
#define MEMAUDIT_COMMON_TRAINING_NUMERICS_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace memaudit {

enum class NumericsMode { kPortable, kNative };

inline constexpr char kPortableNumerics[] = "portable";
inline constexpr char kNativeNumerics[] = "native";
// The numeric class of every portable worker (WorkerCapabilities.numeric_class).
inline constexpr char kPortableNumericClass[] = "portable";
// A class is at most this long, of [A-Za-z0-9._=/-] (checked wherever one
// arrives from a worker or a spec).
inline constexpr size_t kMaxNumericClassBytes = 128;

// "portable" or "native"; anything else is an error naming the choices
// (and quoting the first 32 bytes of what it got).
absl::StatusOr<NumericsMode> ParseNumericsMode(absl::string_view name);

// Whether `numeric_class` names a native worker's class ("native/...").
bool IsNativeClass(absl::string_view numeric_class);

// The environment variables the libraries read when they load, with the
// values that pin their AVX2 kernels: ATEN_CPU_CAPABILITY=avx2,
// DNNL_MAX_CPU_ISA=AVX2, OPENBLAS_CORETYPE=Haswell.
struct NumericsPin {
  const char* variable;
  const char* portable_value;
};
inline constexpr NumericsPin kNumericsPins[] = {
    {"ATEN_CPU_CAPABILITY", "avx2"},
    {"DNNL_MAX_CPU_ISA", "AVX2"},
    {"OPENBLAS_CORETYPE", "Haswell"},
};

// Whether this CPU runs the portable kernels (AVX2 and FMA).
bool CpuHasPortableIsa();

// Sets this process's environment for `mode` before LibTorch, oneDNN or
// OpenBLAS is loaded (they read it once, at load or first use): portable
// overrides whatever the caller's environment held; native keeps it (an ISA
// cap there is part of the class). Call it before starting threads. Fails
// for portable on a CPU without AVX2 and FMA.
absl::Status PinNumerics(NumericsMode mode);

// For a program that links LibTorch, oneDNN and OpenBLAS (already loaded
// when it starts, and OpenBLAS has read its environment): when the portable
// values are not all set, sets them and starts this program again
// (/proc/self/exe, the same arguments); returns when they are set, or on a
// CPU without AVX2 and FMA (where portable kernels cannot run).
void RestartWithPortableNumerics();

// This process's numeric class for CPU tasks, after PinNumerics(mode):
// "portable", or "native/<vendor>-<family>-<model>" followed by
// "/<VARIABLE>=<value>" for each pin variable the environment sets.
std::string LocalNumericClass(NumericsMode mode);

// "" when `numeric_class` is a well-formed class, else what is wrong.
std::string NumericClassProblem(absl::string_view numeric_class);

// A worker's numeric environment (engine/numeric_environment.h), as it
// reports one with a completed task, and how many distinct ones an audit
// records (spec Resources.numeric_environments; the last as "...").
inline constexpr size_t kMaxNumericEnvironmentBytes = 256;
inline constexpr int kMaxNumericEnvironments = 8;

// "" when `environment` fits CompleteRequest.numeric_environment (at most
// kMaxNumericEnvironmentBytes of printable ASCII), else what is wrong.
std::string NumericEnvironmentProblem(absl::string_view environment);

}  // namespace memaudit

#endif  // MEMAUDIT_COMMON_TRAINING_NUMERICS_H_
