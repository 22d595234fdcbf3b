// Small synthetic image datasets for the engine's facade tests, torch-free.
#ifndef MEMAUDIT_ENGINE_TEST_IMAGES_H_
#define MEMAUDIT_ENGINE_TEST_IMAGES_H_

#include <algorithm>
#include <cstdint>

#include "common/base/seeding.h"
#include "data/labeled_examples.h"

namespace memaudit::engine {

// 4 classes of 16-pixel images: a class lights its own block of 4 pixels,
// plus seeded noise on every pixel, so a small model learns the classes
// without memorizing it all, and each image has an identity a larger one
// can memorize.
inline data::LabeledExamples BlockImages(uint32_t count, uint64_t seed) {
  data::LabeledExamples d;
  d.count = count;
  d.features = 16;
  d.classes = 4;
  SplitMix64 rng(seed);
  for (uint32_t i = 0; i < count; ++i) {
    const uint8_t y = static_cast<uint8_t>(rng.Uniform(4));
    d.labels.push_back(y);
    for (uint32_t f = 0; f < 16; ++f) {
      const double signal = f / 4 == y ? 120 : 0;
      d.pixels.push_back(static_cast<uint8_t>(std::min(255.0, signal + rng.Uniform(136))));
    }
  }
  return d;
}

}  // namespace memaudit::engine

#endif  // MEMAUDIT_ENGINE_TEST_IMAGES_H_
