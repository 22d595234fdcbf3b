// What long tasks share while they train: exact progress counts and the
// early streaming of observations measured so far.
#ifndef MEMAUDIT_SERVICES_WORKER_TASK_PROGRESS_H_
#define MEMAUDIT_SERVICES_WORKER_TASK_PROGRESS_H_

#include <algorithm>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "common/base/steps.h"
#include "memaudit/v1/scorer.pb.h"

namespace memaudit::worker {

// Examples seen after `steps` steps of minibatch SGD over `train_size`
// examples in batches of `batch_size`, the last batch of each epoch short.
inline uint64_t ExamplesAfter(uint64_t steps, uint64_t train_size, uint64_t batch_size) {
  if (train_size == 0 || batch_size == 0) return 0;
  const uint64_t per_epoch = StepsPerEpoch(train_size, batch_size);
  return steps / per_epoch * train_size +
         std::min<uint64_t>(steps % per_epoch * batch_size, train_size);
}

// Streams each newly measured point through `send`; a failed early send is
// not fatal, since the final stream carries everything. Without `send` it
// does nothing.
template <typename Result>
class EarlySender {
 public:
  using Convert = std::function<std::vector<v1::Observation>(const Result&)>;
  EarlySender(Convert convert,
              const std::function<absl::Status(const std::vector<v1::Observation>&)>& send)
      : convert_(std::move(convert)), send_(send) {}
  void operator()(const Result& so_far) {
    if (!send_) return;
    std::vector<v1::Observation> all = convert_(so_far);
    std::vector<v1::Observation> fresh(all.begin() + sent_, all.end());
    if (send_(fresh).ok()) sent_ = all.size();
  }

 private:
  Convert convert_;
  const std::function<absl::Status(const std::vector<v1::Observation>&)>& send_;
  size_t sent_ = 0;
};

}  // namespace memaudit::worker

#endif  // MEMAUDIT_SERVICES_WORKER_TASK_PROGRESS_H_
