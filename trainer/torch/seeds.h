// Seed derivation for the trainer's random streams.
//
// Every stream that must resume exactly (dropout, data order) is re-seeded from a pure
// function of (base seed, stream owner, step) instead of carrying generator state through
// checkpoints: resuming at step S then draws exactly what an uninterrupted run drew.
#pragma once

#include <cstdint>

#include "trace/split_mix64.h"

namespace dsdiag::trainer {

// A seed for item `b` of stream `a`; distinct (a, b) give unrelated seeds.
inline uint64_t MixSeed(uint64_t a, uint64_t b) {
  return trace::SplitMix64(trace::SplitMix64(a) ^ (b * 0xd1b54a32d192ed03ull));
}

}  // namespace dsdiag::trainer
