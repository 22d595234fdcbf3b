#include "common/base/clock.h"

#include <chrono>

namespace memaudit {

int64_t RealClock::NowMs() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

RealClock* RealClock::Get() {
  static RealClock* clock = new RealClock();
  return clock;
}

}  // namespace memaudit
