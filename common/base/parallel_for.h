// Runs independent pieces of work on a few threads: fn(i) once for each i in
// [0, n), the caller's thread among them. Each fn writes only its own result
// slot, so the results do not depend on the thread count or the schedule.
#ifndef MEMAUDIT_COMMON_BASE_PARALLEL_FOR_H_
#define MEMAUDIT_COMMON_BASE_PARALLEL_FOR_H_

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

namespace memaudit {

// max_threads 0: one per hardware thread.
template <typename Fn>
void ParallelFor(size_t n, size_t max_threads, const Fn& fn) {
  if (max_threads == 0) max_threads = std::max(1u, std::thread::hardware_concurrency());
  const size_t threads = std::min(n, max_threads);
  std::atomic<size_t> next{0};
  auto drain = [&] {
    for (size_t i = next++; i < n; i = next++) fn(i);
  };
  std::vector<std::thread> helpers;
  for (size_t t = 1; t < threads; ++t) helpers.emplace_back(drain);
  drain();
  for (std::thread& h : helpers) h.join();
}

}  // namespace memaudit

#endif  // MEMAUDIT_COMMON_BASE_PARALLEL_FOR_H_
