// SplitMix64::Uniform(bound) for one bound drawn many times, to the same
// values from the same stream. Uniform divides twice per draw (its rejection
// limit, then x % bound); a bootstrap draws millions with one bound, where
// those divisions cost more than the generator. Here the limit is computed
// once and the remainder by multiplication (Lemire, Kaser and Kurz, "Faster
// remainder by direct computation", 2019: with c = ceil(2^128 / d),
// x mod d = ((c·x mod 2^128)·d) >> 128 for every 64-bit x and d >= 1).
#ifndef MEMAUDIT_SCORING_FIXED_BOUND_UNIFORM_H_
#define MEMAUDIT_SCORING_FIXED_BOUND_UNIFORM_H_

#include <cstdint>

#include "common/base/seeding.h"

namespace memaudit::scoring {

class FixedBoundUniform {
 public:
  // bound >= 1.
  explicit FixedBoundUniform(uint64_t bound)
      : bound_(bound),
        limit_(~uint64_t{0} - (~uint64_t{0} % bound)),
        // ceil(2^128 / d), which wraps to 0 for d = 1 (where every remainder is 0).
        c_(~static_cast<unsigned __int128>(0) / bound + 1) {}

  // The value rng.Uniform(bound) would return, advancing rng as it would:
  // the same rejection of draws >= limit, then the same remainder.
  uint64_t operator()(SplitMix64& rng) const {
    uint64_t x;
    do {
      x = rng.Next();
    } while (x >= limit_);
    return Remainder(x);
  }

  uint64_t Remainder(uint64_t x) const {
    using u128 = unsigned __int128;
    const u128 low_bits = c_ * x;  // c·x mod 2^128
    const u128 low = static_cast<u128>(static_cast<uint64_t>(low_bits)) * bound_;
    const u128 high = static_cast<u128>(static_cast<uint64_t>(low_bits >> 64)) * bound_;
    return static_cast<uint64_t>((high + (low >> 64)) >> 64);
  }

 private:
  uint64_t bound_;
  uint64_t limit_;
  unsigned __int128 c_;
};

}  // namespace memaudit::scoring

#endif  // MEMAUDIT_SCORING_FIXED_BOUND_UNIFORM_H_
