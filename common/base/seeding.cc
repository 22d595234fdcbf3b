#include "common/base/seeding.h"

#include <algorithm>

namespace memaudit {
namespace {

uint64_t Mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t Fnv1a(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

}  // namespace

uint64_t DeriveSeed(uint64_t seed, std::string_view role, uint64_t index) {
  return Mix(Mix(seed ^ 0x6d656d6175646974ULL) ^ Mix(Fnv1a(role)) ^
             Mix(index + 0x9e3779b97f4a7c15ULL));
}

uint64_t SplitMix64::Next() {
  state_ += 0x9e3779b97f4a7c15ULL;
  return Mix(state_);
}

uint64_t SplitMix64::Uniform(uint64_t bound) {
  // Rejection sampling keeps every value equally likely.
  const uint64_t limit = ~uint64_t{0} - (~uint64_t{0} % bound);
  uint64_t x;
  do {
    x = Next();
  } while (x >= limit);
  return x % bound;
}

double SplitMix64::UniformDouble() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

std::vector<uint32_t> SeededPermutation(uint64_t seed, uint32_t n) {
  std::vector<uint32_t> p(n);
  for (uint32_t i = 0; i < n; ++i) p[i] = i;
  SplitMix64 rng(seed);
  for (uint32_t i = n; i > 1; --i) {
    std::swap(p[i - 1], p[rng.Uniform(i)]);
  }
  return p;
}

std::vector<uint32_t> AuditPool(uint64_t seed, uint32_t dataset_size, uint32_t pool_size) {
  std::vector<uint32_t> perm = SeededPermutation(DeriveSeed(seed, "pool", 0), dataset_size);
  perm.resize(pool_size < dataset_size ? pool_size : dataset_size);
  return perm;
}

std::vector<uint32_t> AuditPopulation(uint64_t seed, uint32_t dataset_size, uint32_t pool_size,
                                      uint32_t population_size) {
  std::vector<uint32_t> perm = SeededPermutation(DeriveSeed(seed, "pool", 0), dataset_size);
  const size_t begin = std::min<size_t>(pool_size, perm.size());
  const size_t end = std::min<size_t>(begin + population_size, perm.size());
  return std::vector<uint32_t>(perm.begin() + begin, perm.begin() + end);
}

KeepMatrix BuildKeepMatrix(uint64_t seed, uint32_t models, uint32_t examples) {
  KeepMatrix keep;
  keep.models = models;
  keep.examples = examples;
  keep.bits.assign(static_cast<size_t>(models) * examples, 0);
  for (uint32_t pair = 0; 2 * pair < models; ++pair) {
    const std::vector<uint32_t> order =
        SeededPermutation(DeriveSeed(seed, "keep_pair", pair), examples);
    // The first half of the order goes to model 2k, the rest to 2k+1; an odd
    // example count gives the extra example to the even model.
    const uint32_t half = (examples + 1) / 2;
    for (uint32_t k = 0; k < examples; ++k) {
      const uint32_t model = 2 * pair + (k < half ? 0 : 1);
      if (model < models) keep.bits[static_cast<size_t>(model) * examples + order[k]] = 1;
    }
  }
  return keep;
}

}  // namespace memaudit
