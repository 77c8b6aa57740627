// Seed derivation for the trainer's random streams.
//
// Every stream that must resume exactly (dropout, data order) is re-seeded from a pure
// function of (base seed, stream owner, step) instead of carrying generator state through
// checkpoints: resuming at step S then draws exactly what an uninterrupted run drew.
#pragma once

#include <cstdint>

namespace dsdiag::trainer {

// SplitMix64 finaliser: a cheap bijective mix with good avalanche.
inline uint64_t Mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// A seed for item `b` of stream `a`; distinct (a, b) give unrelated seeds.
inline uint64_t MixSeed(uint64_t a, uint64_t b) {
  return Mix64(Mix64(a) ^ (b * 0xd1b54a32d192ed03ull));
}

}  // namespace dsdiag::trainer
