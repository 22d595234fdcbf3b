// One heartbeat for all of a worker's tasks: every interval, one Heartbeat
// call renews every lease the worker holds (HeartbeatRequest.more), however
// many tasks it runs, and tells each task whether the coordinator wants it
// stopped. A coordinator that answers fewer verdicts than leases (one that
// predates `more`) gets the rest one call each.
#ifndef MEMAUDIT_SERVICES_WORKER_HEARTBEATS_H_
#define MEMAUDIT_SERVICES_WORKER_HEARTBEATS_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "memaudit/v1/worker.grpc.pb.h"

namespace memaudit::worker {

// Why the coordinator told a task to stop (set by the heartbeat thread).
struct StopOrder {
  std::atomic<bool> given{false};
  absl::Mutex mu;
  std::string reason ABSL_GUARDED_BY(mu);
};

class Heartbeats {
 public:
  // Sends one Heartbeat through `send` every `interval` while a lease is
  // registered; `send` makes the RPC (with its deadline) and returns its
  // status.
  using Send = std::function<grpc::Status(const v1::HeartbeatRequest&, v1::HeartbeatResponse*)>;
  Heartbeats(absl::Duration interval, Send send);
  // Joins the thread; no call is made after.
  ~Heartbeats();
  Heartbeats(const Heartbeats&) = delete;
  Heartbeats& operator=(const Heartbeats&) = delete;

  // A lease beaten from construction until destruction (RAII): `steps` is
  // read at each beat, `stop` set when the coordinator says so.
  class Lease {
   public:
    Lease(Heartbeats* beats, std::string worker_id, std::string lease_id,
          const std::atomic<uint64_t>* steps, StopOrder* stop);
    ~Lease();
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;

   private:
    Heartbeats* const beats_;
    const uint64_t id_;
  };

  // Heartbeat calls made so far (for tests).
  uint64_t calls() const;

 private:
  struct Held {
    std::string worker_id;
    std::string lease_id;
    const std::atomic<uint64_t>* steps;
    StopOrder* stop;
  };
  void Loop();
  // One round: every lease held now, in as few calls as the coordinator
  // allows. Never under mu_ (it makes RPCs); `stop` orders are written under
  // mu_ so a lease removed meanwhile is not touched.
  void Beat();

  const absl::Duration interval_;
  const Send send_;
  mutable absl::Mutex mu_;
  absl::CondVar wake_;  // the destructor
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<uint64_t, Held> held_ ABSL_GUARDED_BY(mu_);
  uint64_t calls_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread thread_;  // last: it starts once the members above exist
};

}  // namespace memaudit::worker

#endif  // MEMAUDIT_SERVICES_WORKER_HEARTBEATS_H_
