#include <dlfcn.h>

#include <mutex>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/base/process.h"
#include "tokenizers/sentencepiece_bridge.h"

namespace memaudit::tokenizers::bridge {
namespace {

#if defined(__has_feature)
constexpr bool kSanitized = __has_feature(address_sanitizer) || __has_feature(thread_sanitizer);
#elif defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

}  // namespace

const Library* LoadLibrary(std::string* error) {
  static std::once_flag once;
  static const Library* library = nullptr;
  static std::string* failure = new std::string();
  std::call_once(once, [] {
    if (kSanitized) {
      // Sanitizer runtimes abort on RTLD_DEEPBIND, and without it the two
      // protobuf copies meet (sentencepiece_bridge.h).
      *failure = "SentencePiece tokenizers are not available in sanitizer builds";
      return;
    }
    const std::string dir = ExecutableDir();
    const std::vector<std::string> paths = {dir + "/libmemaudit_sentencepiece.so",
                                            dir + "/../lib/memaudit/libmemaudit_sentencepiece.so"};
    std::vector<std::string> tried;
    for (const std::string& path : paths) {
      // RTLD_DEEPBIND: the module and libsentencepiece bind to their own
      // protobuf copy, never to the program's (sentencepiece_bridge.h).
      void* module = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
      if (module == nullptr) {
        tried.push_back(dlerror());
        continue;
      }
      auto function = reinterpret_cast<LibraryFunction>(dlsym(module, kLibrarySymbol));
      if (function != nullptr) library = function();
      if (library != nullptr) return;
      tried.push_back(absl::StrCat(path, ": exports no ", kLibrarySymbol));
    }
    *failure = absl::StrCat("SentencePiece tokenizers need libmemaudit_sentencepiece.so (",
                            absl::StrJoin(tried, "; "), ")");
  });
  if (library == nullptr) *error = *failure;
  return library;
}

}  // namespace memaudit::tokenizers::bridge
