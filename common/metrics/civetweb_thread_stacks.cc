#include "common/metrics/civetweb_thread_stacks.h"

#include <dlfcn.h>
#include <pthread.h>

#include <algorithm>

namespace memaudit {
namespace {

// 0 outside a ScopedThreadStackFloor. Per thread: see the header.
thread_local size_t stack_floor_bytes = 0;

}  // namespace

ScopedThreadStackFloor::ScopedThreadStackFloor(size_t min_bytes) : saved_(stack_floor_bytes) {
  stack_floor_bytes = min_bytes;
}

ScopedThreadStackFloor::~ScopedThreadStackFloor() { stack_floor_bytes = saved_; }

}  // namespace memaudit

// Defined in the executable (this object is linked in whenever the metrics
// endpoint is), so it takes precedence over libc's for every shared library,
// civetweb's included.
namespace {

using SetStackSize = int (*)(pthread_attr_t*, size_t);

SetStackSize LibcSetStackSize() {
  static const auto real =
      reinterpret_cast<SetStackSize>(dlsym(RTLD_NEXT, "pthread_attr_setstacksize"));
  return real;
}

// Looked up before main: dlsym takes the dynamic loader's lock, which a
// module loading on another thread holds through its whole start-up (the
// worker's engine, ~0.3 s), and the metrics endpoint starts meanwhile.
const SetStackSize kLibcSetStackSize = LibcSetStackSize();

}  // namespace

extern "C" int pthread_attr_setstacksize(pthread_attr_t* attr, size_t stack_size) {
  return LibcSetStackSize()(attr, std::max(stack_size, memaudit::stack_floor_bytes));
}
