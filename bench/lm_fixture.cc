#include "bench/lm_fixture.h"

#include <cstdio>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "bench/bench_util.h"
#include "engine/lm_dataset.h"
#include "engine/torch_api.h"

namespace memaudit::bench {

absl::StatusOr<LmFixture> TrainOrLoadLm(const LmFixtureOptions& o) {
  using namespace engine;  // NOLINT
  LmFixture f;
  f.format = DigitsFormat("the random number is ", 9);
  f.secret = "281265017";  // the paper's example canary
  absl::StatusOr<std::string> corpus = ReadTextCorpus(kFortunesDir);
  if (!corpus.ok()) return corpus.status();
  std::string text = corpus->substr(0, corpus->rfind('\n', o.corpus_chars) + 1);
  text = InsertCanaries(text, f.format, {{f.secret, o.repeats}}, 1);
  f.vocab = CharVocab::Build(text + "0123456789");
  ModelSpec spec;
  spec.kind = ModelKind::kLstmLm;
  spec.vocab = f.vocab.size();
  spec.units = o.units;
  TrainerOptions t;
  t.optimizer.kind = OptimizerKind::kAdam;
  t.optimizer.learning_rate = 3e-3;
  t.threads = 1;
  auto trainer = Trainer::Create([spec] { return BuildModel(spec, 7); }, t);
  if (!trainer.ok()) return trainer.status();
  f.trainer = *std::move(trainer);
  const std::string cache =
      absl::StrCat(o.cache, ".", o.corpus_chars, ".", o.repeats, ".", o.epochs, ".", o.units);
  if (std::filesystem::exists(cache) && f.trainer->Load(cache).ok()) return f;
  TensorDataset data = LmWindows(f.vocab.Encode(text), 64);
  std::vector<int64_t> pool(data.size());
  for (int64_t i = 0; i < data.size(); ++i) pool[i] = i;
  EpochSchedule schedule(pool, 32, 2);
  const double start = Seconds();
  double loss_sum = 0;
  absl::Status s = f.trainer->Train(
      data, schedule, o.epochs * schedule.steps_per_epoch(), [&](uint64_t step, double loss) {
        loss_sum += loss;
        if (step % schedule.steps_per_epoch() == 0) {
          std::fprintf(stderr, "epoch %lu loss %.3f\n", step / schedule.steps_per_epoch(),
                       loss_sum / schedule.steps_per_epoch());
          loss_sum = 0;
        }
        return true;
      });
  if (!s.ok()) return s;
  f.train_seconds = Seconds() - start;
  (void)f.trainer->Save(cache);
  return f;
}

}  // namespace memaudit::bench
