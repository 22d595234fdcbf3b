#include "engine/numeric_environment.h"

#include <ATen/Version.h>
#include <dlfcn.h>
#include <torch/version.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "engine/device.h"

namespace memaudit::engine {
namespace {

// What LibTorch reports of its own build (at::show_config): the value of
// the line "  - <prefix>...", or "" when no line has it.
std::string ConfigLine(const std::string& config, absl::string_view prefix) {
  for (absl::string_view line : absl::StrSplit(config, '\n')) {
    line = absl::StripLeadingAsciiWhitespace(line);
    if (!absl::ConsumePrefix(&line, "- ")) continue;
    if (absl::ConsumePrefix(&line, prefix)) return std::string(line);
  }
  return "";
}

// A symbol of a library the process has loaded already (LibTorch's
// dependencies), or null. Looked up by library rather than linked, so that
// an engine built against a LibTorch with oneDNN inside (pip's) still loads.
void* LoadedSymbol(const char* library, const char* symbol) {
  void* handle = dlopen(library, RTLD_LAZY | RTLD_NOLOAD);
  if (handle == nullptr) return nullptr;
  void* found = dlsym(handle, symbol);
  dlclose(handle);
  return found;
}

// oneDNN's version and the instruction set its JIT kernels use.
std::string OneDnnPart(const std::string& config) {
  struct Version {  // the leading fields of dnnl_version_t
    int major, minor, patch;
  };
  using VersionFn = const Version* (*)();
  using IsaFn = int (*)();
  auto version = reinterpret_cast<VersionFn>(LoadedSymbol("libdnnl.so.2", "dnnl_version"));
  auto isa = reinterpret_cast<IsaFn>(LoadedSymbol("libdnnl.so.2", "dnnl_get_effective_cpu_isa"));
  if (version == nullptr || isa == nullptr) {
    // Inside LibTorch: only its version is known ("v2.6.3 (Git Hash ...)").
    std::string built = ConfigLine(config, "Intel(R) MKL-DNN ");
    if (built.empty()) built = ConfigLine(config, "Intel(R) oneDNN ");
    if (built.empty()) return "";
    return absl::StrCat("oneDNN ", absl::string_view(built).substr(0, built.find(' ')));
  }
  const Version* v = version();
  const int effective = isa();
  // dnnl_cpu_isa_t's values (oneapi/dnnl/dnnl_types.h).
  std::string isa_name = absl::StrFormat("isa 0x%x", effective);
  switch (effective) {
    case 0x1:
      isa_name = "sse41";
      break;
    case 0x3:
      isa_name = "avx";
      break;
    case 0x7:
      isa_name = "avx2";
      break;
    case 0x407:
      isa_name = "avx2_vnni";
      break;
    case 0x27:
      isa_name = "avx512_core";
      break;
    case 0x67:
      isa_name = "avx512_core_vnni";
      break;
    case 0xe7:
      isa_name = "avx512_core_bf16";
      break;
    case 0x3e7:
      isa_name = "avx512_core_amx";
      break;
    default:
      break;
  }
  return absl::StrCat("oneDNN ", v->major, ".", v->minor, ".", v->patch, " ", isa_name);
}

// OpenBLAS's version and the core type its kernels were picked for.
std::string OpenBlasPart() {
  using TextFn = const char* (*)();
  for (const char* library : {"libblas.so.3", "libopenblas.so.0"}) {
    auto config = reinterpret_cast<TextFn>(LoadedSymbol(library, "openblas_get_config"));
    auto core = reinterpret_cast<TextFn>(LoadedSymbol(library, "openblas_get_corename"));
    if (config == nullptr || core == nullptr) continue;
    // "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Haswell MAX_THREADS=64"
    std::vector<absl::string_view> words = absl::StrSplit(config(), ' ');
    const absl::string_view release = words.size() >= 2 ? words[1] : "?";
    return absl::StrCat("OpenBLAS ", release, " ", core());
  }
  return "";
}

}  // namespace

std::string NumericEnvironment() {
  const std::string config = at::show_config();
  const std::string device = DefaultDevice();
  std::vector<std::string> parts = {device, absl::StrCat("LibTorch ", TORCH_VERSION)};
  if (device != "cpu") {
    for (absl::string_view prefix : {"CUDA Runtime ", "CuDNN "}) {
      if (std::string value = ConfigLine(config, prefix); !value.empty()) {
        parts.push_back(absl::StrCat(prefix, value));
      }
    }
    const MatmulPrecision precision = CurrentMatmulPrecision();
    parts.push_back(precision == MatmulPrecision::kFp32   ? "fp32"
                    : precision == MatmulPrecision::kTf32 ? "tf32"
                                                          : "bf16");
  }
  if (std::string aten = ConfigLine(config, "CPU capability usage: "); !aten.empty()) {
    parts.push_back(absl::StrCat("ATen ", aten));
  }
  for (std::string part : {OneDnnPart(config), OpenBlasPart()}) {
    if (!part.empty()) parts.push_back(std::move(part));
  }
  return absl::StrJoin(parts, "; ");
}

}  // namespace memaudit::engine
