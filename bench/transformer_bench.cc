// The built-in transformer LM, two ratios measured in one run:
//  1. search: the exact rank of a 6-digit canary after a 20-character prefix
//     with the key/value cache (one token per step) against the same search
//     recomputing every state's whole prefix each step, at an equal query
//     budget (target >= 10x);
//  2. training: memaudit's trainer against the same model written in
//     PyTorch and trained by a plain Python loop (bench/peer/
//     transformer_peer.py: Adam, forward, cross-entropy, backward, step) on
//     batches of the same shape and threads (target >= 1.0x); and against a
//     plain LibTorch loop in this process over memaudit's model, which shows
//     what the trainer itself costs.
// Medians of --reps runs.
//
//   build/bin/transformer_bench [--reps=3] [--queries=100000] [--steps=40] [--threads=1] [--peer=1]
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/bench_util.h"
#include "engine/lm_dataset.h"
#include "engine/lm_search.h"
#include "engine/recomputing_lm.h"
#include "engine/text_corpus.h"
#include "engine/trainer.h"
#include "engine/transformer_lm.h"

using namespace memaudit;          // NOLINT
using namespace memaudit::engine;  // NOLINT

namespace {

ModelSpec BenchModel(int64_t vocab) {
  ModelSpec spec;
  spec.kind = ModelKind::kTransformerLm;
  spec.vocab = vocab;
  spec.embedding = 128;
  spec.layers = 2;
  spec.heads = 4;
  spec.units = 512;
  spec.context = 256;
  return spec;
}

double TimeRank(LanguageModel& lm, const TokenFormat& format, const std::vector<int64_t>& canary,
                uint64_t queries, uint64_t* rank) {
  LmScorer scorer(lm);
  const double t0 = bench::Seconds();
  auto r = BranchAndBoundRank(scorer, format, canary, queries);
  const double s = bench::Seconds() - t0;
  *rank = r.ok() ? r->rank : 0;
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = static_cast<int>(bench::FlagInt(argc, argv, "reps", 3));
  const uint64_t queries = static_cast<uint64_t>(bench::FlagInt(argc, argv, "queries", 100000));
  const bool peer = bench::FlagInt(argc, argv, "peer", 1) != 0;
  const int64_t steps = bench::FlagInt(argc, argv, "steps", 40);
  const int threads = static_cast<int>(bench::FlagInt(argc, argv, "threads", 1));
  torch::set_num_threads(threads);

  const CanaryFormat canary_format = DigitsFormat("my secret number is ", 6);  // 20 characters
  const std::string text = SyntheticText(40'000, 5);
  const CharVocab vocab = CharVocab::Build(text + canary_format.prefix + "0123456789");
  const ModelSpec spec = BenchModel(vocab.size());
  const TokenFormat format = *ToTokenFormat(vocab, canary_format);
  const std::vector<int64_t> canary = *SecretTokens(vocab, format, canary_format, "281265");

  // 1. Search: an untrained model, so the branch-and-bound explores widely
  // and the query budget, not the model, ends the search.
  auto built = BuildModel(spec, 1);
  if (!built.ok()) {
    std::fprintf(stderr, "%s\n", built.status().ToString().c_str());
    return 1;
  }
  TransformerLm& lm = static_cast<TransformerLm&>(**built);
  lm.eval();
  RecomputingLm recomputing(lm);
  std::vector<double> cached_s, full_s;
  uint64_t cached_rank = 0, full_rank = 0;
  for (int r = 0; r < reps; ++r) {
    cached_s.push_back(TimeRank(lm, format, canary, queries, &cached_rank));
    full_s.push_back(TimeRank(recomputing, format, canary, queries, &full_rank));
  }
  const double cached = bench::Median(cached_s), full = bench::Median(full_s);
  std::printf(
      "search, %lu queries (rank lower bound: cached %lu, recomputed %lu): cached %.3f s, "
      "recomputed %.3f s\n",
      queries, cached_rank, full_rank, cached, full);
  std::printf("RESULT key/value cache speed-up: %.1fx (target >= 10x)\n", full / cached);

  // 2. Training: the same model, windows and batches both ways.
  const TensorDataset data = LmWindows(vocab.Encode(text), 64);
  std::vector<int64_t> pool(data.size());
  for (int64_t i = 0; i < data.size(); ++i) pool[i] = i;
  const EpochSchedule schedule(pool, 32, 2);
  std::vector<double> engine_s, plain_s;
  for (int r = 0; r < reps; ++r) {
    TrainerOptions options;
    options.optimizer.kind = OptimizerKind::kAdam;
    options.optimizer.learning_rate = 1e-3;
    options.threads = threads;
    auto trainer = Trainer::Create([&spec] { return BuildModel(spec, 2); }, options);
    if (!trainer.ok()) {
      std::fprintf(stderr, "%s\n", trainer.status().ToString().c_str());
      return 1;
    }
    double t0 = bench::Seconds();
    absl::Status trained = (*trainer)->Train(data, schedule, steps);
    engine_s.push_back(bench::Seconds() - t0);
    if (!trained.ok()) {
      std::fprintf(stderr, "%s\n", trained.ToString().c_str());
      return 1;
    }

    std::shared_ptr<Model> model = *BuildModel(spec, 2);
    model->train();
    torch::optim::Adam adam(model->parameters(), torch::optim::AdamOptions(1e-3));
    t0 = bench::Seconds();
    for (int64_t step = 0; step < steps; ++step) {
      const torch::Tensor rows = torch::tensor(schedule.At(step).ids, torch::kLong);
      adam.zero_grad();
      torch::Tensor loss =
          model->BatchLoss(data.x().index_select(0, rows), data.y().index_select(0, rows));
      loss.backward();
      adam.step();
    }
    plain_s.push_back(bench::Seconds() - t0);
  }
  const double engine = bench::Median(engine_s), plain = bench::Median(plain_s);
  std::printf(
      "training, %ld steps of 32 windows of 64: memaudit %.3f s, plain LibTorch loop %.3f s\n",
      steps, engine, plain);
  std::printf("RESULT trainer vs a plain LibTorch loop over the same model: %.2fx\n",
              plain / engine);
  if (peer) {
    const std::string cmd = absl::StrCat(
        "/usr/bin/python3 ", MEMAUDIT_SOURCE_DIR,
        "/bench/peer/transformer_peer.py --vocab=", vocab.size(), " --width=", spec.embedding,
        " --layers=", spec.layers, " --heads=", spec.heads, " --feed-forward=", spec.units,
        " --context=", spec.context, " --window=64 --batch=32 --steps=", steps,
        " --threads=", threads, " --reps=", reps, " 2>/dev/null");
    FILE* pipe = popen(cmd.c_str(), "r");
    double peer_s = 0;
    if (pipe != nullptr && std::fscanf(pipe, "seconds %lf", &peer_s) == 1 && peer_s > 0) {
      std::printf("peer (PyTorch, the same transformer, a plain Python loop): %.3f s\n", peer_s);
      std::printf("RESULT training vs the PyTorch peer: %.2fx (target >= 1.0x)\n", peer_s / engine);
    } else {
      std::printf("peer: failed to run (python3-torch absent?): %s\n", cmd.c_str());
    }
    if (pipe != nullptr) pclose(pipe);
  }
  std::printf("reproduce: build/bin/transformer_bench --reps=%d --queries=%lu --steps=%ld\n", reps,
              queries, steps);
  return 0;
}
