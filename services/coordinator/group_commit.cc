#include "services/coordinator/group_commit.h"

#include <utility>

namespace memaudit::coordinator {

GroupCommit::GroupCommit(Store* store, Hooks hooks)
    : store_(store),
      hooks_(std::move(hooks)),
      writer_([this] { Write(); }),
      answerer_([this] { Answer(); }) {}

GroupCommit::~GroupCommit() { Stop(); }

void GroupCommit::Enqueue(Mutation m, Done done) {
  absl::MutexLock lock(&mu_);
  queued_.push_back(std::move(m));
  waiting_.push_back(std::move(done));
  queued_changed_.Signal();
}

void GroupCommit::DiscardQueued() {
  absl::MutexLock lock(&mu_);
  for (Done& done : waiting_) discarded_.push_back(std::move(done));
  queued_.clear();
  waiting_.clear();
}

void GroupCommit::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    stopping_ = true;
    queued_changed_.Signal();
  }
  writer_.join();
  answerer_.join();
}

uint64_t GroupCommit::groups() const {
  absl::MutexLock lock(&mu_);
  return groups_;
}

uint64_t GroupCommit::decisions() const {
  absl::MutexLock lock(&mu_);
  return decisions_;
}

void GroupCommit::Write() {
  std::vector<Mutation> group;
  std::vector<Done> answers;
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      while (queued_.empty() && !stopping_) queued_changed_.Wait(&mu_);
      if (queued_.empty()) {  // stopping, and everything written
        written_all_ = true;
        written_.Signal();
        return;
      }
      group.swap(queued_);
      answers.swap(waiting_);
      ++groups_;
      decisions_ += group.size();
    }
    const absl::Time start = absl::Now();
    const absl::Status written = store_->CommitAll(group);
    if (written.ok()) {
      hooks_.durable(group.size(), absl::Now() - start);
    } else {
      hooks_.failed(written);
    }
    absl::MutexLock lock(&mu_);
    for (Done& done : discarded_) answers.push_back(std::move(done));
    discarded_.clear();
    to_answer_.emplace_back(written, std::move(answers));
    answers.clear();  // moved from
    written_.Signal();
    group.clear();
  }
}

void GroupCommit::Answer() {
  std::vector<std::pair<absl::Status, std::vector<Done>>> answering;
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      while (to_answer_.empty() && !written_all_) written_.Wait(&mu_);
      if (to_answer_.empty()) return;  // the writer ended and all is answered
      answering.swap(to_answer_);
    }
    for (auto& [written, answers] : answering) {
      for (Done& done : answers) std::move(done)(written);
    }
    answering.clear();
  }
}

}  // namespace memaudit::coordinator
