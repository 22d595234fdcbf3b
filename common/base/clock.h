// Time goes through this seam so lease expiry and retries are tested without
// sleeps (a fake clock is advanced by hand).
#ifndef MEMAUDIT_COMMON_BASE_CLOCK_H_
#define MEMAUDIT_COMMON_BASE_CLOCK_H_

#include <atomic>
#include <cstdint>

namespace memaudit {

class Clock {
 public:
  virtual ~Clock() = default;
  // Milliseconds since the Unix epoch.
  virtual int64_t NowMs() const = 0;
};

class RealClock : public Clock {
 public:
  int64_t NowMs() const override;
  static RealClock* Get();
};

class FakeClock : public Clock {
 public:
  explicit FakeClock(int64_t start_ms = 1'700'000'000'000) : now_(start_ms) {}
  int64_t NowMs() const override { return now_.load(); }
  void AdvanceMs(int64_t ms) { now_ += ms; }

 private:
  std::atomic<int64_t> now_;
};

}  // namespace memaudit

#endif  // MEMAUDIT_COMMON_BASE_CLOCK_H_
