// Test corpora shared by engine and integration tests.
#ifndef MEMAUDIT_COMMON_TESTING_RANDOM_TEXT_H_
#define MEMAUDIT_COMMON_TESTING_RANDOM_TEXT_H_

#include <cstdint>
#include <string>

#include "common/base/seeding.h"

namespace memaudit::testing {

// Lines of seeded random lowercase "words", at least `chars` long. Unlike a
// small fixed vocabulary the corpus never becomes easy, so training on it
// keeps moving a model, which is what erodes a memorized canary.
inline std::string RandomLetterLines(size_t chars) {
  SplitMix64 rng(5);
  std::string text, line;
  while (text.size() < chars) {
    const uint64_t length = 2 + rng.Uniform(6);
    for (uint64_t i = 0; i < length; ++i) line += static_cast<char>('a' + rng.Uniform(26));
    if (line.size() > 40) {
      text += line + "\n";
      line.clear();
    } else {
      line += " ";
    }
  }
  return text;
}

}  // namespace memaudit::testing

#endif  // MEMAUDIT_COMMON_TESTING_RANDOM_TEXT_H_
