// Labelled Gaussian blobs for attack-classifier tests.
#ifndef MEMAUDIT_SCORING_TEST_BLOBS_H_
#define MEMAUDIT_SCORING_TEST_BLOBS_H_

#include <cstdint>
#include <random>
#include <vector>

#include "scoring/matrix.h"

namespace memaudit::scoring {

struct LabeledBlobs {
  Matrix x;
  std::vector<uint8_t> y;
};

// Label 1 shifts feature 0 by `shift` standard deviations; the other features
// are noise, so with shift = 0 the labels are pure noise. Labels alternate,
// so both classes are always present.
inline LabeledBlobs Blobs(uint64_t seed, size_t n, double shift, size_t features) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g;
  LabeledBlobs d{Matrix(n, features), std::vector<uint8_t>(n)};
  for (size_t i = 0; i < n; ++i) {
    d.y[i] = i % 2;
    for (size_t j = 0; j < features; ++j) d.x.at(i, j) = g(rng);
    d.x.at(i, 0) += shift * d.y[i];
  }
  return d;
}

}  // namespace memaudit::scoring

#endif  // MEMAUDIT_SCORING_TEST_BLOBS_H_
