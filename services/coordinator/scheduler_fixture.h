// A scheduler over a real SQLite file and a fake clock, for scheduler tests.
#ifndef MEMAUDIT_SERVICES_COORDINATOR_SCHEDULER_FIXTURE_H_
#define MEMAUDIT_SERVICES_COORDINATOR_SCHEDULER_FIXTURE_H_

#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>

#include "common/testing/status_matchers.h"
#include "gtest/gtest.h"
#include "services/coordinator/scheduler.h"
#include "services/coordinator/sqlite_store.h"
#include "spec/test_specs.h"

namespace memaudit::coordinator {

class SchedulerFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = ::testing::TempDir() + "/scheduler_" + std::to_string(getpid()) + "_" +
            test->test_suite_name() + "_" + test->name() + ".db";
    std::remove(path_.c_str());
    Reopen();
  }
  void TearDown() override { std::remove(path_.c_str()); }

  // A fresh scheduler over the same database: what a restart sees.
  void Reopen() {
    scheduler_.reset();
    store_.reset();
    auto store = SqliteStore::Open(path_);
    MEMAUDIT_ASSERT_OK(store);
    store_ = std::move(*store);
    auto s = Scheduler::Create(store_.get(), &clock_, options_, &registry_);
    MEMAUDIT_ASSERT_OK(s);
    scheduler_ = std::move(*s);
  }

  LeaseGrant MustLease(const std::string& worker = "w") {
    auto grant = scheduler_->Lease(worker, 0);
    MEMAUDIT_EXPECT_OK(grant);
    EXPECT_TRUE(grant->has_value());
    return **grant;
  }

  // What Reopen creates the scheduler with; a test may change it, then Reopen.
  static SchedulerOptions DefaultOptions() {
    SchedulerOptions options;
    options.lease_ttl_ms = 1000;
    return options;
  }

  std::string path_;
  SchedulerOptions options_ = DefaultOptions();
  FakeClock clock_;
  prometheus::Registry registry_;
  std::unique_ptr<SqliteStore> store_;
  std::unique_ptr<Scheduler> scheduler_;
};

}  // namespace memaudit::coordinator

#endif  // MEMAUDIT_SERVICES_COORDINATOR_SCHEDULER_FIXTURE_H_
