// A membership audit of documents (spec `membership.documents`): a task's
// models are language models, each trained on its half of the pool's
// sequences, sending phi (mean token log-probability), loss (its negative),
// the population's loss and the text signals of the reference-free attacks
// (zlib, min_k, min_k_plus) for every pool sequence.
#ifndef MEMAUDIT_AUDITS_MEMBERSHIP_WORKER_DOCUMENTS_H_
#define MEMAUDIT_AUDITS_MEMBERSHIP_WORKER_DOCUMENTS_H_

#include <vector>

#include "absl/status/statusor.h"
#include "memaudit/v1/worker.pb.h"
#include "services/worker/kind_handler.h"

namespace memaudit::worker {

absl::StatusOr<std::vector<v1::Observation>> RunDocumentModels(const v1::Task& task,
                                                               const StepCallback& on_steps);

// The given target (`membership.target` with documents): the team's
// TorchScript language model scored as it is on the pool and population,
// as model N, with the member signal: which pool sequences occur in the
// text it trained on (members_path).
absl::StatusOr<std::vector<v1::Observation>> RunDocumentsTarget(const v1::Task& task,
                                                                const StepCallback& on_steps);

}  // namespace memaudit::worker

#endif  // MEMAUDIT_AUDITS_MEMBERSHIP_WORKER_DOCUMENTS_H_
