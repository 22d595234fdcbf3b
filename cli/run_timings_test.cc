#include "cli/run_timings.h"

#include "common/messages/event_types.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace memaudit::cli {
namespace {

v1::AuditEvent Event(const std::string& type, int64_t unix_ms) {
  v1::AuditEvent event;
  event.set_type(EventTypeByName(type));
  event.set_unix_ms(unix_ms);
  return event;
}

TEST(RunTimingsTest, OneLineOfEveryPhase) {
  const absl::Time t0 = absl::FromUnixMillis(1'000'000);
  RunTimings timings;
  timings.start = t0;
  timings.ready = t0 + absl::Milliseconds(120);
  timings.submitted = t0 + absl::Milliseconds(130);
  for (const v1::AuditEvent& e :
       {Event("submitted", 1'000'125), Event("task_leased", 1'000'180),
        Event("progress", 1'000'300), Event("task_leased", 1'000'900),
        Event("task_succeeded", 1'000'800), Event("task_released", 1'001'000),
        Event("task_succeeded", 1'002'180), Event("audit_succeeded", 1'002'190)}) {
    timings.Observe(e);
  }
  timings.results = t0 + absl::Milliseconds(2200);
  timings.report = t0 + absl::Milliseconds(2250);
  timings.stopped = t0 + absl::Milliseconds(2350);
  EXPECT_EQ(timings.Line(),
            "timings: start_s=0.120 submit_s=0.010 first_lease_s=0.180 tasks_s=2.000 "
            "scoring_s=0.020 report_s=0.050 shutdown_s=0.100 overhead_s=0.330 total_s=2.350");
}

TEST(RunTimingsTest, WhatDidNotHappenIsNan) {
  RunTimings timings;
  timings.start = absl::FromUnixMillis(5000);
  timings.ready = absl::FromUnixMillis(5100);
  timings.Observe(Event("task_reused", 5150));  // no lease: every model reused
  EXPECT_THAT(timings.Line(), ::testing::StartsWith("timings: start_s=0.100 submit_s=nan "
                                                    "first_lease_s=nan tasks_s=nan"));
  EXPECT_THAT(timings.Line(), ::testing::EndsWith("overhead_s=nan total_s=nan"));
}

}  // namespace
}  // namespace memaudit::cli
