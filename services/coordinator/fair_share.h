// Which audit the next lease serves: weighted fair queuing over teams (an
// audit's owner, AuditRecord.team; "" is a team too), then over the audits
// of the team.
//
// Each team has a virtual time that a lease granted to it advances by
// kLeaseCost / weight (weights from the --quotas file, quotas.h; default 1).
// A lease goes to the team with the smallest virtual time (ties: the team
// that has had queued work the longest) among those with an audit the
// worker's offer fits; within the team, to the audit with the highest
// `resources.priority`, then the smallest audit virtual time (one per lease
// granted to it), then the earliest submitted. A team or audit the offer
// does not fit is passed over for this lease only: it keeps its virtual
// time, and so its place.
//
// Idle time is not banked: a team that starts to have queued work again
// starts at the smallest virtual time of the teams that have some (its own
// is kept when none has), and an audit at the smallest of its team's ready
// audits of the same priority. So a team that was away for a day, or whose
// earlier audits all finished, shares from now on instead of taking every
// lease until it has caught up.
//
// An audit is "ready" when a lease may take one of its tasks now (it is not
// terminal and has queued tasks); only ready audits, and teams with one, are
// in the order, so finished audits cost nothing. A pick costs O(log n) when
// the first team's first audit fits the offer, and at worst one step per
// team and per ready audit it does not fit.
#ifndef MEMAUDIT_SERVICES_COORDINATOR_FAIR_SHARE_H_
#define MEMAUDIT_SERVICES_COORDINATOR_FAIR_SHARE_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

namespace memaudit::coordinator {

class FairShare {
 public:
  // A lease's cost in virtual time to a team of weight 1: divisible by every
  // weight from 1 to 16 and by 1000, so common weights advance exactly.
  static constexpr int64_t kLeaseCost = 720720000;

  // `weights`: team -> weight in [1, 1000]; a team not listed weighs 1.
  explicit FairShare(std::map<std::string, uint32_t> weights = {});

  // Audits are numbered densely from 0, in the order added.
  void AddAudit(size_t audit, const std::string& team, int32_t priority);
  // Whether a lease may take one of the audit's tasks now.
  void SetReady(size_t audit, bool ready);
  // A lease of one of the audit's tasks was granted (and committed).
  void Charge(size_t audit);

  // The first ready audit in fair order for which `fits(audit)` is true.
  template <typename Fits>
  std::optional<size_t> Pick(const Fits& fits) const {
    for (const Team* team : busy_) {
      for (const Audit* audit : team->ready) {
        if (fits(audit->number)) return audit->number;
      }
    }
    return std::nullopt;
  }

  // For tests and diagnostics: a team's virtual time (0 for one never seen)
  // and an audit's.
  int64_t team_virtual_time(const std::string& team) const;
  int64_t audit_virtual_time(size_t audit) const { return audits_[audit].virtual_time; }

 private:
  struct Team;
  struct Audit {
    size_t number = 0;
    Team* team = nullptr;
    int32_t priority = 0;
    int64_t virtual_time = 0;
    bool ready = false;
  };
  // Highest priority, then smallest virtual time, then submitted first.
  struct AuditOrder {
    bool operator()(const Audit* a, const Audit* b) const;
  };
  struct Team {
    int64_t stride = kLeaseCost;  // kLeaseCost / weight
    int64_t virtual_time = 0;
    // When the team last started to have ready audits: ties go to the
    // team that has waited longest.
    uint64_t since = 0;
    std::set<Audit*, AuditOrder> ready;
  };
  // Smallest virtual time, then waiting longest.
  struct TeamOrder {
    bool operator()(const Team* a, const Team* b) const;
  };

  Team* TeamNamed(const std::string& name);

  std::map<std::string, uint32_t> weights_;
  std::map<std::string, std::unique_ptr<Team>> teams_;
  std::deque<Audit> audits_;         // by number; a deque keeps their addresses
  std::set<Team*, TeamOrder> busy_;  // teams with a ready audit
  uint64_t next_since_ = 0;
};

}  // namespace memaudit::coordinator

#endif  // MEMAUDIT_SERVICES_COORDINATOR_FAIR_SHARE_H_
