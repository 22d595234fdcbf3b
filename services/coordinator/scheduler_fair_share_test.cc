// Fair share between teams and between a team's audits (fair_share.h), and
// the scheduler's indexes (task_index.h) checked against a recount from the
// store after random operations. On the fixture's fake clock.
#include <algorithm>
#include <array>
#include <cstdlib>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/metrics/metrics.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/coordinator/scheduler.h"
#include "services/coordinator/scheduler_fixture.h"

namespace memaudit::coordinator {
namespace {

const Caller kAlpha = Caller::Team("alpha");
const Caller kBeta = Caller::Team("beta");

v1::AuditSpec Spec(uint32_t tasks, int32_t priority = 0, uint32_t threads = 1) {
  v1::AuditSpec spec = spec::SmallMembershipSpec(tasks);  // one task per reference model
  spec.mutable_resources()->set_priority(priority);
  spec.mutable_resources()->set_threads_per_task(threads);
  return spec;
}

WorkerOffer Cpu(uint32_t threads) {
  WorkerOffer offer;
  offer.total.set_threads(threads);
  offer.free = offer.total;
  return offer;
}

class SchedulerFairShareTest : public SchedulerFixture {
 protected:
  void SubmitAs(const Caller& caller, const std::string& audit_id, const v1::AuditSpec& spec) {
    Submission s;
    s.audit_id = audit_id;
    s.spec = spec;
    s.caller = caller;
    MEMAUDIT_ASSERT_OK(scheduler_->Submit(s));
  }
  // The audit the next lease serves ("" if none), for `offer`.
  std::string LeaseAudit(const std::optional<WorkerOffer>& offer = Cpu(1)) {
    auto grant = scheduler_->Lease("w", 0, offer);
    MEMAUDIT_EXPECT_OK(grant);
    if (!grant.ok() || !grant->has_value()) return "";
    return (*grant)->task.audit_id;
  }
  std::vector<std::string> LeaseAudits(int n, const std::optional<WorkerOffer>& offer = Cpu(1)) {
    std::vector<std::string> out;
    for (int i = 0; i < n; ++i) out.push_back(LeaseAudit(offer));
    return out;
  }
};

int Count(const std::vector<std::string>& v, const std::string& x) {
  return static_cast<int>(std::count(v.begin(), v.end(), x));
}

// One team's 2,000-task audit holds no one up: another team's small audit,
// submitted behind it, is served at once and then shares evenly.
TEST_F(SchedulerFairShareTest, ASmallAuditOfAnotherTeamIsNotStarvedByABigOne) {
  SubmitAs(kAlpha, "big", Spec(2000));
  EXPECT_EQ(Count(LeaseAudits(100), "big"), 100);
  SubmitAs(kBeta, "small", Spec(10));
  const std::vector<std::string> first = LeaseAudits(2);
  EXPECT_EQ(Count(first, "small"), 1) << "served within the first 2 leases after its submit";
  const std::vector<std::string> next = LeaseAudits(18);
  EXPECT_EQ(Count(next, "small"), 9) << "then every other lease, until done";
  EXPECT_EQ(Count(LeaseAudits(10), "big"), 10);
  EXPECT_EQ(scheduler_->Get("small")->tasks().queued(), 0u);
}

TEST_F(SchedulerFairShareTest, BusyTeamsShareLeasesByTheirWeights) {
  options_.quotas.weights["alpha"] = 3;
  Reopen();
  SubmitAs(kAlpha, "a", Spec(500));
  SubmitAs(kBeta, "b", Spec(500));
  const std::vector<std::string> leased = LeaseAudits(400);
  EXPECT_NEAR(Count(leased, "a"), 300, 1);
  EXPECT_NEAR(Count(leased, "b"), 100, 1);
  // And in every stretch, not only in total: never more than 4 of alpha's
  // in a row, never 2 of beta's.
  int run_a = 0, run_b = 0;
  for (const std::string& id : leased) {
    run_a = id == "a" ? run_a + 1 : 0;
    run_b = id == "b" ? run_b + 1 : 0;
    EXPECT_LE(run_a, 4);
    EXPECT_LE(run_b, 1);
  }
}

// Within a team the highest priority goes first (equal ones share); across
// teams priority buys no more than the team's share.
TEST_F(SchedulerFairShareTest, PriorityOrdersATeamsAuditsButNotTheTeams) {
  SubmitAs(kAlpha, "low", Spec(4, /*priority=*/-5));
  SubmitAs(kAlpha, "normal", Spec(4));
  SubmitAs(kAlpha, "high", Spec(4, /*priority=*/10));
  EXPECT_THAT(LeaseAudits(12),
              ::testing::ElementsAre("high", "high", "high", "high", "normal", "normal", "normal",
                                     "normal", "low", "low", "low", "low"));

  SubmitAs(kAlpha, "urgent", Spec(4, /*priority=*/100));
  SubmitAs(kBeta, "plain", Spec(4));
  const std::vector<std::string> leased = LeaseAudits(8);
  EXPECT_EQ(Count(leased, "urgent"), 4);
  EXPECT_EQ(Count(leased, "plain"), 4);
  for (size_t i = 0; i + 1 < leased.size(); ++i) EXPECT_NE(leased[i], leased[i + 1]) << i;
}

TEST_F(SchedulerFairShareTest, AuditsOfATeamWithEqualPriorityShare) {
  SubmitAs(kAlpha, "first", Spec(100));
  EXPECT_EQ(Count(LeaseAudits(50), "first"), 50);
  // A later audit does not wait for the first to finish, nor catch up on
  // its 50 leases: it starts level with it.
  SubmitAs(kAlpha, "second", Spec(100));
  const std::vector<std::string> leased = LeaseAudits(20);
  EXPECT_EQ(Count(leased, "second"), 10);
  EXPECT_EQ(Count(leased, "first"), 10);
}

// A team that had no queued work for a long time starts level with the busy
// teams: it shares from then on instead of taking every lease.
TEST_F(SchedulerFairShareTest, AnIdleTeamBanksNoCredit) {
  SubmitAs(kBeta, "early", Spec(4));
  for (int i = 0; i < 4; ++i) MEMAUDIT_ASSERT_OK(scheduler_->Complete(MustLease().task.lease_id));
  SubmitAs(kAlpha, "busy", Spec(2000));
  for (int i = 0; i < 500; ++i) {
    LeaseGrant g = MustLease();
    ASSERT_EQ(g.task.audit_id, "busy");
    MEMAUDIT_ASSERT_OK(scheduler_->Complete(g.task.lease_id));
    clock_.AdvanceMs(60'000);  // a long time, on the fake clock
  }
  SubmitAs(kBeta, "late", Spec(1000));
  const std::vector<std::string> first = LeaseAudits(10);
  EXPECT_LE(Count(first, "late"), 5) << "not every lease";
  EXPECT_GE(Count(first, "late"), 5);
  EXPECT_NEAR(Count(LeaseAudits(100), "late"), 50, 1);
}

// Work no offer fits (too wide for the worker, or for a GPU) holds up no
// other team, and keeps its place for the workers it fits.
TEST_F(SchedulerFairShareTest, AnAuditThatDoesNotFitBlocksNoOtherTeam) {
  v1::AuditSpec gpu = Spec(10);
  gpu.mutable_resources()->set_gpus_per_task(1);
  SubmitAs(kAlpha, "gpu", gpu);
  SubmitAs(kAlpha, "wide", Spec(10, /*priority=*/0, /*threads=*/8));
  SubmitAs(kBeta, "narrow", Spec(20));
  EXPECT_EQ(Count(LeaseAudits(8, Cpu(2)), "narrow"), 8);
  // Alpha was passed over 8 times without being charged: on a worker its
  // wide audit fits, it is behind and goes first until level.
  EXPECT_EQ(Count(LeaseAudits(8, Cpu(8)), "wide"), 8);
  const std::vector<std::string> level = LeaseAudits(4, Cpu(8));
  EXPECT_EQ(Count(level, "wide"), 2);
  EXPECT_EQ(Count(level, "narrow"), 2);
  WorkerOffer gpu_worker = Cpu(8);
  gpu_worker.total.set_gpus(1);
  gpu_worker.free.set_gpus(1);
  EXPECT_EQ(LeaseAudit(gpu_worker), "gpu");
}

// ---------------------------------------------------------------------------
// Random operations, then a recount from what the store holds.

// The value of the series `series` ("name{labels}" or "name") in `text`.
double Series(const std::string& text, const std::string& series) {
  const std::string key = "\n" + series + " ";
  const size_t at = text.find(key);
  if (at == std::string::npos) return -1;
  return std::strtod(text.c_str() + at + key.size(), nullptr);
}

const char* const kAuditStateLabels[] = {"",          "queued", "running",
                                         "succeeded", "failed", "cancelled"};

struct Recount {
  struct Audit {
    v1::AuditState state = v1::AUDIT_STATE_UNSPECIFIED;
    std::string team;
    std::array<uint64_t, 5> by_state{};
    uint64_t total = 0, steps_total = 0, steps_done = 0;
  };
  std::map<std::string, Audit> audits;
  std::array<uint64_t, 5> tasks{};
  std::array<uint64_t, 6> audit_states{};
  uint64_t queue_depth = 0, leases = 0;
  std::map<std::string, std::array<uint64_t, 6>> team_audits;
  std::map<std::string, uint64_t> team_unfinished;
};

// Counts what `store` holds from scratch. A leased task's progress is in
// memory only: `progress` is the last heartbeat of each lease since the
// scheduler started (else the stored value).
Recount CountFromScratch(Store& store, const std::map<std::string, uint64_t>& progress) {
  Recount r;
  auto audits = store.LoadAudits();
  auto tasks = store.LoadTasks();
  EXPECT_TRUE(audits.ok() && tasks.ok());
  if (!audits.ok() || !tasks.ok()) return r;
  for (const AuditRecord& a : *audits) {
    Recount::Audit& c = r.audits[a.audit_id];
    c.state = a.state;
    c.team = a.team;
    r.audit_states[a.state] += 1;
    if (!a.team.empty()) {
      r.team_audits[a.team][a.state] += 1;
      r.team_unfinished[a.team] += 0;
    }
  }
  for (const TaskRecord& t : *tasks) {
    Recount::Audit& c = r.audits.at(t.audit_id);
    const auto state = static_cast<size_t>(t.state);
    c.by_state[state] += 1;
    c.total += 1;
    c.steps_total += t.steps_total;
    r.tasks[state] += 1;
    const bool live = !IsTerminal(c.state);
    if (t.state == TaskState::kSucceeded) c.steps_done += t.steps_total;
    if (t.state == TaskState::kLeased) {
      auto hb = progress.find(t.lease_id);
      c.steps_done += std::min(hb == progress.end() ? t.steps_done : hb->second, t.steps_total);
      r.leases += 1;
    }
    if (t.state == TaskState::kQueued && live) r.queue_depth += 1;
    if ((t.state == TaskState::kQueued || t.state == TaskState::kLeased) && live &&
        !c.team.empty()) {
      r.team_unfinished[c.team] += 1;
    }
  }
  return r;
}

TEST_F(SchedulerFairShareTest, CountsAndGaugesMatchARecountAfterRandomOperations) {
  options_.max_releases_per_task = 2;
  options_.max_expiries_per_task = 2;
  options_.quotas.weights["alpha"] = 2;
  Reopen();
  const std::vector<Caller> callers = {kAlpha, kBeta, Caller::Team("gamma"), Caller::Admin("")};
  std::mt19937 rng(20240611);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  std::vector<std::string> audit_ids;
  // Leases a test worker holds (it may have lost them since): id -> steps_total.
  std::map<std::string, uint64_t> held;
  std::map<std::string, uint64_t> progress;  // lease -> last heartbeat since the start
  auto pick_held = [&]() -> std::string {
    if (held.empty()) return "";
    auto it = held.begin();
    std::advance(it, uniform(0, static_cast<int>(held.size()) - 1));
    return it->first;
  };
  std::map<std::string, int> ops;

  for (int step = 0; step < 1500; ++step) {
    const int op = uniform(0, 99);
    std::string name;
    if (op < 6 && audit_ids.size() < 40) {
      name = "submit";
      v1::AuditSpec spec = Spec(2 * uniform(2, 4), uniform(-2, 2), uniform(1, 2));
      spec.mutable_resources()->set_max_attempts(uniform(1, 3));
      const std::string id = absl::StrCat("a-", audit_ids.size());
      Submission s;
      s.audit_id = id;
      s.spec = spec;
      s.caller = callers[uniform(0, static_cast<int>(callers.size()) - 1)];
      if (uniform(0, 4) == 0) s.reused[0] = "earlier";  // a task that starts succeeded
      MEMAUDIT_ASSERT_OK(scheduler_->Submit(s));
      audit_ids.push_back(id);
    } else if (op < 40) {
      name = "lease";
      auto grant = scheduler_->Lease("w", 0, Cpu(uniform(1, 2)));
      MEMAUDIT_ASSERT_OK(grant);
      if (grant->has_value()) held[(*grant)->task.lease_id] = (*grant)->task.steps_total;
    } else if (op < 55) {
      name = "heartbeat";
      const std::string lease = pick_held();
      if (lease.empty()) continue;
      const uint64_t steps = uniform(0, static_cast<int>(held[lease]) + 3);
      auto verdict = scheduler_->Heartbeat(lease, steps);
      MEMAUDIT_ASSERT_OK(verdict);
      if (verdict->stop) {
        held.erase(lease);
      } else {
        progress[lease] = steps;
      }
    } else if (op < 75) {
      const std::string lease = pick_held();
      if (lease.empty()) continue;
      held.erase(lease);
      absl::Status s;
      const int how = uniform(0, 3);
      if (how == 0) {
        name = "complete";
        s = scheduler_->Complete(lease);
      } else if (how == 1) {
        name = "fail";
        s = scheduler_->Fail(lease, "boom", /*retryable=*/uniform(0, 3) != 0);
      } else {
        name = "release";
        s = scheduler_->Release(lease, "shutting down");
      }
      // A lease lost since (expired, or cancelled with its audit) is refused.
      EXPECT_TRUE(s.ok() || s.code() == absl::StatusCode::kFailedPrecondition) << s;
    } else if (op < 88) {
      name = "expire";
      clock_.AdvanceMs(uniform(0, 700));
      MEMAUDIT_ASSERT_OK(scheduler_->ExpireLeases());
    } else if (op < 96) {
      name = "cancel";
      if (audit_ids.empty()) continue;
      MEMAUDIT_ASSERT_OK(
          scheduler_->Cancel(audit_ids[uniform(0, static_cast<int>(audit_ids.size()) - 1)]));
    } else {
      name = "restart";
      Reopen();
      progress.clear();  // a restart shows the progress last committed
    }
    ops[name] += 1;

    // The recount, from a second connection to the file.
    auto reader = SqliteStore::Open(path_);
    MEMAUDIT_ASSERT_OK(reader);
    const Recount r = CountFromScratch(**reader, progress);
    for (const auto& [id, c] : r.audits) {
      auto got = scheduler_->Get(id);
      MEMAUDIT_ASSERT_OK(got);
      SCOPED_TRACE(absl::StrCat("step ", step, " (", name, "), audit ", id));
      EXPECT_EQ(got->state(), c.state);
      EXPECT_EQ(got->tasks().total(), c.total);
      EXPECT_EQ(got->tasks().queued(), c.by_state[0]);
      EXPECT_EQ(got->tasks().running(), c.by_state[1]);
      EXPECT_EQ(got->tasks().succeeded(), c.by_state[2]);
      EXPECT_EQ(got->tasks().failed(), c.by_state[3]);
      EXPECT_EQ(got->tasks().cancelled(), c.by_state[4]);
      EXPECT_EQ(got->steps_total(), c.steps_total);
      EXPECT_EQ(got->steps_done(), c.steps_done);
    }
    const std::string text = metrics::Exposition(registry_);
    SCOPED_TRACE(absl::StrCat("step ", step, " (", name, ")\n", text));
    for (size_t s = 0; s < 5; ++s) {
      const std::string state = TaskStateName(static_cast<TaskState>(s));
      EXPECT_EQ(Series(text, "memaudit_coordinator_tasks{state=\"" + state + "\"}"), r.tasks[s])
          << state;
    }
    for (size_t s = 1; s < 6; ++s) {
      EXPECT_EQ(Series(text, absl::StrCat("memaudit_coordinator_audits{state=\"",
                                          kAuditStateLabels[s], "\"}")),
                r.audit_states[s])
          << kAuditStateLabels[s];
    }
    EXPECT_EQ(Series(text, "memaudit_coordinator_queue_depth"), r.queue_depth);
    EXPECT_EQ(Series(text, "memaudit_coordinator_leases"), r.leases);
    for (const auto& [team, states] : r.team_audits) {
      for (size_t s = 1; s < 6; ++s) {
        EXPECT_EQ(Series(text, absl::StrCat("memaudit_coordinator_team_audits{state=\"",
                                            kAuditStateLabels[s], "\",team=\"", team, "\"}")),
                  states[s])
            << team << " " << kAuditStateLabels[s];
      }
      EXPECT_EQ(Series(text, "memaudit_coordinator_team_queued_tasks{team=\"" + team + "\"}"),
                r.team_unfinished.at(team))
          << team;
    }
    if (::testing::Test::HasFailure()) break;
  }
  // The walk went everywhere.
  for (const char* op : {"submit", "lease", "heartbeat", "complete", "fail", "release", "expire",
                         "cancel", "restart"}) {
    EXPECT_GE(ops[op], 10) << op;
  }
}

}  // namespace
}  // namespace memaudit::coordinator
