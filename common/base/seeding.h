// Deterministic randomness for planning: every data subset, order and
// initialization in memaudit is a pure function of (audit seed, role, index).
// The generators here are portable on purpose: std::shuffle and the standard
// distributions are implementation-defined, so plans would differ across
// standard libraries.
#ifndef MEMAUDIT_COMMON_BASE_SEEDING_H_
#define MEMAUDIT_COMMON_BASE_SEEDING_H_

#include <cstdint>
#include <string_view>
#include <vector>

namespace memaudit {

// Mixes (seed, role, index) into an independent 64-bit seed.
uint64_t DeriveSeed(uint64_t seed, std::string_view role, uint64_t index);

// SplitMix64: tiny, fast, and identical on every platform.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t Next();
  // Uniform in [0, bound) without modulo bias; bound > 0.
  uint64_t Uniform(uint64_t bound);
  // Uniform double in [0, 1) with 53 random bits.
  double UniformDouble();

 private:
  uint64_t state_;
};

// A uniformly random permutation of 0..n-1 (Fisher-Yates).
std::vector<uint32_t> SeededPermutation(uint64_t seed, uint32_t n);

// The audit pool: `pool_size` distinct indices drawn from [0, dataset_size).
std::vector<uint32_t> AuditPool(uint64_t seed, uint32_t dataset_size, uint32_t pool_size);

// RMIA's population: the `population_size` indices that follow the pool in
// the same permutation, so they are disjoint from it and no model trains on
// them. Fewer when the dataset runs out.
std::vector<uint32_t> AuditPopulation(uint64_t seed, uint32_t dataset_size, uint32_t pool_size,
                                      uint32_t population_size);

// The LiRA keep-matrix: models x examples, row-major, 1 = the example is in
// that model's training set. Models come in complementary pairs: model 2k
// trains on a seeded random half of the examples and model 2k+1 on the other
// half. So every example is in exactly models/2 models (as in the LiRA code),
// and a model's row depends only on (seed, index, examples), never on the
// number of models: an audit that grows from 16 to 64 models keeps the first
// 16 unchanged, which is what lets trained models be reused.
struct KeepMatrix {
  uint32_t models = 0;
  uint32_t examples = 0;
  std::vector<uint8_t> bits;
  bool in(uint32_t model, uint32_t example) const {
    return bits[static_cast<size_t>(model) * examples + example] != 0;
  }
};
KeepMatrix BuildKeepMatrix(uint64_t seed, uint32_t models, uint32_t examples);

}  // namespace memaudit

#endif  // MEMAUDIT_COMMON_BASE_SEEDING_H_
