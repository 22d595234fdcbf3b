// A character LSTM trained on a prefix of the fortunes corpus with one
// 9-digit canary inserted many times: the model the exposure and extract
// benchmarks query. Cached as a checkpoint so the second benchmark reuses it.
#ifndef MEMAUDIT_BENCH_LM_FIXTURE_H_
#define MEMAUDIT_BENCH_LM_FIXTURE_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "engine/char_lm.h"
#include "engine/lm_scorer.h"
#include "engine/text_corpus.h"
#include "engine/trainer.h"

namespace memaudit::bench {

struct LmFixture {
  std::unique_ptr<engine::Trainer> trainer;
  engine::CharVocab vocab;
  engine::CanaryFormat format;
  std::string secret;
  double train_seconds = 0;  // 0 when loaded from the cache
  engine::CharLm& lm() { return static_cast<engine::CharLm&>(trainer->model()); }
};

struct LmFixtureOptions {
  uint64_t corpus_chars = 150'000;
  uint32_t repeats = 100;
  uint32_t epochs = 8;
  int64_t units = 128;
  std::string cache = "/tmp/memaudit_bench_lm.pt";
};

absl::StatusOr<LmFixture> TrainOrLoadLm(const LmFixtureOptions& options);

}  // namespace memaudit::bench

#endif  // MEMAUDIT_BENCH_LM_FIXTURE_H_
