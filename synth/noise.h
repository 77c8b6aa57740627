// Noise: counter-based pseudo-randomness for synthetic traces.
//
// Every value is a pure function of (seed, a, b, slot) — typically (seed, rank, step, what)
// — rather than the next draw of a stateful generator. Any rank can then be rendered alone,
// in any order, on any thread, and the bytes come out the same; the cross-rank schedule
// and the per-rank renderer recompute the same jitter without sharing state.
#pragma once

#include <cstdint>

#include "trace/split_mix64.h"

namespace dsdiag::synth {

// A bijection on 64 bits that scatters nearby inputs.
constexpr uint64_t Mix(uint64_t x) { return trace::SplitMix64(x); }

class Noise {
 public:
  constexpr Noise(uint64_t seed, int64_t a, int64_t b)
      : key_(Mix(Mix(Mix(seed) ^ static_cast<uint64_t>(a)) ^ static_cast<uint64_t>(b))) {}

  constexpr uint64_t Bits(uint32_t slot) const { return Mix(key_ ^ (uint64_t{slot} << 40)); }
  // Uniform in [0, 1).
  constexpr double Uniform(uint32_t slot) const {
    return static_cast<double>(Bits(slot) >> 11) * (1.0 / 9007199254740992.0);
  }
  // Uniform in [-1, 1).
  constexpr double Symmetric(uint32_t slot) const { return 2.0 * Uniform(slot) - 1.0; }

 private:
  uint64_t key_;
};

}  // namespace dsdiag::synth
