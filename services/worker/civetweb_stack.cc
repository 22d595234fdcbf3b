// Lets civetweb's threads start in a process that links LibTorch.
//
// Debian's civetweb 1.15 is built to give its threads 100 KiB stacks
// (pthread_attr_setstacksize(attr, 102400)), with no run-time option to
// change it. glibc carves a thread's static TLS out of its stack, and the
// libraries LibTorch pulls in (OpenBLAS 60 KiB, glog 30 KiB, torch 10 KiB)
// need more than 100 KiB of it, so pthread_create fails with EINVAL and the
// worker's /metrics cannot start. Defining the function in the executable
// interposes it for every shared library; requests below kMinStackBytes are
// raised to it, so a thread that could not have started now can, and
// nothing else changes.
#include <dlfcn.h>
#include <pthread.h>

#include <algorithm>
#include <cstddef>

namespace {

constexpr size_t kMinStackBytes = size_t{1} << 20;

using SetStackSize = int (*)(pthread_attr_t*, size_t);

}  // namespace

extern "C" int pthread_attr_setstacksize(pthread_attr_t* attr, size_t stack_size) {
  static const auto real =
      reinterpret_cast<SetStackSize>(dlsym(RTLD_NEXT, "pthread_attr_setstacksize"));
  return real(attr, std::max(stack_size, kMinStackBytes));
}
