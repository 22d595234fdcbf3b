// Lets civetweb's threads start in a process that links LibTorch.
//
// Debian's civetweb 1.15 gives its threads 100 KiB stacks
// (pthread_attr_setstacksize(attr, 102400)), with no option to change it.
// glibc carves a thread's static TLS out of its stack, and the libraries
// LibTorch pulls in (OpenBLAS 60 KiB, glog 30 KiB, torch 10 KiB) need more
// than 100 KiB of it, so pthread_create fails with EINVAL and
// prometheus::Exposer throws ("null context when constructing CivetServer").
//
// civetweb_thread_stacks.cc interposes pthread_attr_setstacksize for the
// whole process, but it changes a request only on a thread inside a
// ScopedThreadStackFloor, where it raises sizes below the floor to it.
// civetweb creates all of its threads from the thread that starts it, so a
// floor around the Exposer's construction reaches exactly those threads;
// every other thread in the process gets the size it asked for.
#ifndef MEMAUDIT_COMMON_METRICS_CIVETWEB_THREAD_STACKS_H_
#define MEMAUDIT_COMMON_METRICS_CIVETWEB_THREAD_STACKS_H_

#include <cstddef>

namespace memaudit {

class ScopedThreadStackFloor {
 public:
  explicit ScopedThreadStackFloor(size_t min_bytes);
  ~ScopedThreadStackFloor();
  ScopedThreadStackFloor(const ScopedThreadStackFloor&) = delete;
  ScopedThreadStackFloor& operator=(const ScopedThreadStackFloor&) = delete;

 private:
  size_t saved_;
};

}  // namespace memaudit

#endif  // MEMAUDIT_COMMON_METRICS_CIVETWEB_THREAD_STACKS_H_
