// SplitMix64's finaliser: a cheap bijection on 64 bits with good avalanche, so that nearby
// inputs (rank 3, rank 4; step 10, step 11) give unrelated outputs. The one mixer of the
// project: synth's counter-based noise (synth/noise.h) and the trainer's per-stream seeds
// (trainer/torch/seeds.h) are built on it. Lives in the base library both link.
#pragma once

#include <cstdint>

namespace dsdiag::trace {

constexpr uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace dsdiag::trace
