#include "common/metrics/civetweb_thread_stacks.h"

#include <pthread.h>

#include <thread>

#include "gtest/gtest.h"

namespace memaudit {
namespace {

// What a pthread_attr_setstacksize(requested) call leaves in the attributes.
size_t StackSizeAfterRequest(size_t requested) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, requested);
  size_t size = 0;
  pthread_attr_getstacksize(&attr, &size);
  pthread_attr_destroy(&attr);
  return size;
}

constexpr size_t kCivetwebRequest = 102400;  // What Debian's civetweb asks for.

TEST(ThreadStackFloorTest, RequestsPassUnchangedOutsideAFloor) {
  EXPECT_EQ(StackSizeAfterRequest(kCivetwebRequest), kCivetwebRequest);
}

TEST(ThreadStackFloorTest, RaisesSmallRequestsInsideAFloorOnly) {
  {
    ScopedThreadStackFloor floor(1 << 20);
    EXPECT_EQ(StackSizeAfterRequest(kCivetwebRequest), size_t{1} << 20);
    EXPECT_EQ(StackSizeAfterRequest(size_t{4} << 20), size_t{4} << 20);  // Larger: kept.
  }
  EXPECT_EQ(StackSizeAfterRequest(kCivetwebRequest), kCivetwebRequest);
}

TEST(ThreadStackFloorTest, AFloorReachesOnlyItsOwnThread) {
  ScopedThreadStackFloor floor(1 << 20);
  size_t other = 0;
  std::thread([&] { other = StackSizeAfterRequest(kCivetwebRequest); }).join();
  EXPECT_EQ(other, kCivetwebRequest);
}

}  // namespace
}  // namespace memaudit
