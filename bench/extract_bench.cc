// Model queries needed to extract a memorised 9-digit canary by shortest-path
// search (exact Dijkstra and the batched variant), against brute force
// (10^9 candidates, ~1.1e8 model steps with the trie).
//
//   build-engine/bin/extract_bench
#include <cstdio>

#include "bench/bench_util.h"
#include "bench/lm_fixture.h"
#include "engine/lm_search.h"

using namespace memaudit;          // NOLINT
using namespace memaudit::engine;  // NOLINT

int main(int argc, char** argv) {
  auto fx = bench::TrainOrLoadLm({});
  if (!fx.ok()) {
    std::fprintf(stderr, "%s\n", fx.status().ToString().c_str());
    return 1;
  }
  torch::set_num_threads(1);
  TokenFormat format = *ToTokenFormat(fx->vocab, fx->format);
  const double brute_force_steps = 111111111.0;  // internal nodes of the 10^9 trie
  for (size_t m : {1, 16, 64}) {
    LmScorer scorer(fx->lm());
    const double t0 = bench::Seconds();
    ExtractionResult r = ShortestPathExtract(scorer, format, 1'000'000, m);
    const double s = bench::Seconds() - t0;
    const std::string got = r.found ? fx->vocab.Decode(r.tokens) : "(none)";
    std::printf(
        "RESULT pops/iteration %3zu: %s (%s), %lu queries in %lu iterations, %.3f s; "
        "%.0fx fewer model steps than trie brute force (target <= 1000 queries)\n",
        m, got.c_str(), got == fx->secret ? "the canary" : "NOT the canary", r.queries,
        r.iterations, s, brute_force_steps / static_cast<double>(r.queries));
  }
  Completion greedy;
  {
    LmScorer scorer(fx->lm());
    greedy = GreedyComplete(scorer, format);
  }
  std::printf("greedy completion: %s (%.2f bits)\n", fx->vocab.Decode(greedy.tokens).c_str(),
              greedy.px_bits);
  std::printf("reproduce: build-engine/bin/extract_bench\n");
  (void)argc;
  (void)argv;
  return 0;
}
