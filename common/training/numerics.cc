#include "common/training/numerics.h"

#include <cpuid.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace memaudit {

absl::StatusOr<NumericsMode> ParseNumericsMode(absl::string_view name) {
  if (name == kPortableNumerics) return NumericsMode::kPortable;
  if (name == kNativeNumerics) return NumericsMode::kNative;
  return absl::InvalidArgumentError(
      absl::StrCat("must be portable or native (got \"", name.substr(0, 32), "\")"));
}

bool IsNativeClass(absl::string_view numeric_class) {
  return absl::StartsWith(numeric_class, absl::StrCat(kNativeNumerics, "/"));
}

bool CpuHasPortableIsa() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

absl::Status PinNumerics(NumericsMode mode) {
  if (mode == NumericsMode::kNative) return absl::OkStatus();
  if (!CpuHasPortableIsa()) {
    return absl::FailedPreconditionError(
        "portable numerics need a CPU with AVX2 and FMA; this one has neither or one: start "
        "the worker with --numerics native (its numbers may differ from other CPU types')");
  }
  for (const NumericsPin& pin : kNumericsPins) {
    if (setenv(pin.variable, pin.portable_value, /*overwrite=*/1) != 0) {
      return absl::InternalError(absl::StrCat("setenv ", pin.variable, " failed"));
    }
  }
  return absl::OkStatus();
}

namespace {

bool ClassChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         std::strchr("._=/-", c) != nullptr;
}

// `text` as one part of a class: at most `max_bytes`, every character that is
// not a class character, and '/' (which separates the parts), as '_'.
std::string ClassPart(absl::string_view text, size_t max_bytes) {
  std::string part(text.substr(0, max_bytes));
  for (char& c : part) {
    if (!ClassChar(c) || c == '/') c = '_';
  }
  return part;
}

// "<vendor>-<family>-<model>" from CPUID, e.g. "AuthenticAMD-26-2": CPUs of
// one model run the same kernels of every library.
std::string CpuModel() {
  unsigned int eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(0, &eax, &ebx, &ecx, &edx) == 0) return "unknown";
  char vendor[13] = {};
  std::memcpy(vendor, &ebx, 4);
  std::memcpy(vendor + 4, &edx, 4);
  std::memcpy(vendor + 8, &ecx, 4);
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return vendor;
  const unsigned int base_family = (eax >> 8) & 0xf;
  const unsigned int family = base_family == 0xf ? base_family + ((eax >> 20) & 0xff) : base_family;
  unsigned int model = (eax >> 4) & 0xf;
  if (base_family == 0x6 || base_family == 0xf) model |= ((eax >> 16) & 0xf) << 4;
  return ClassPart(absl::StrFormat("%s-%u-%u", vendor, family, model), kMaxNumericClassBytes);
}

}  // namespace

void RestartWithPortableNumerics() {
  bool pinned = true;
  for (const NumericsPin& pin : kNumericsPins) {
    const char* value = std::getenv(pin.variable);
    pinned = pinned && value != nullptr && std::strcmp(value, pin.portable_value) == 0;
  }
  if (pinned || !PinNumerics(NumericsMode::kPortable).ok()) return;
  std::ifstream cmdline("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> args;
  for (std::string arg; std::getline(cmdline, arg, '\0');) args.push_back(arg);
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  execv("/proc/self/exe", argv.data());
  // Not restarted (no /proc): the libraries that read the environment
  // lazily (ATen, oneDNN) still get it.
}

std::string LocalNumericClass(NumericsMode mode) {
  if (mode == NumericsMode::kPortable) return kPortableNumericClass;
  std::string out = absl::StrCat(kNativeNumerics, "/", CpuModel());
  for (const NumericsPin& pin : kNumericsPins) {
    const char* value = std::getenv(pin.variable);
    if (value == nullptr || *value == '\0') continue;
    absl::StrAppend(&out, "/", pin.variable, "=", ClassPart(value, 16));
  }
  return out.substr(0, kMaxNumericClassBytes);
}

std::string NumericClassProblem(absl::string_view numeric_class) {
  if (numeric_class.size() > kMaxNumericClassBytes) {
    return absl::StrCat("must be at most ", kMaxNumericClassBytes, " bytes (got ",
                        numeric_class.size(), ")");
  }
  for (char c : numeric_class) {
    if (!ClassChar(c)) return "may hold only letters, digits and ._=/-";
  }
  return "";
}

std::string NumericEnvironmentProblem(absl::string_view environment) {
  if (environment.size() > kMaxNumericEnvironmentBytes) {
    return absl::StrCat("must be at most ", kMaxNumericEnvironmentBytes, " bytes (got ",
                        environment.size(), ")");
  }
  for (char c : environment) {
    if (c < 0x20 || c > 0x7e) return "may hold only printable ASCII";
  }
  return "";
}

}  // namespace memaudit
