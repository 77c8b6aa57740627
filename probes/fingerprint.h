// Fingerprints: 64-bit xxHash3 of raw bytes, the evidence that two ranks hold the same
// tensor. Hashing reads the bytes in place (no copy), so its cost is close to a memory
// read; bench/ measures it against one.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dsdiag::probes {

uint64_t FingerprintBytes(const void* data, size_t size) noexcept;

// A fingerprint of a sample of the bytes: all of them up to kSampledBytes, else
// kSampleChunks chunks of 64 bytes spread evenly from the first byte to the last. Cheap
// (~0.1 us) whatever the size: it tells "these bytes are not what they were" for a change that
// touches many elements (a rescale, noise, zeroing), not for one element. Light mode uses it
// to confirm that a gradient is still the one hashed whole at the allreduce.
inline constexpr size_t kSampleChunks = 32;
inline constexpr size_t kSampledBytes = kSampleChunks * 64;
uint64_t SampleFingerprint(const void* data, size_t size) noexcept;

// Streams several buffers into one fingerprint (a bucket of parameters), equal to
// FingerprintBytes over their concatenation.
class Fingerprinter {
 public:
  Fingerprinter() noexcept;
  ~Fingerprinter();
  Fingerprinter(const Fingerprinter&) = delete;
  Fingerprinter& operator=(const Fingerprinter&) = delete;

  void Reset() noexcept;
  void Add(const void* data, size_t size) noexcept;
  uint64_t Digest() const noexcept;

 private:
  void* state_;  // XXH3_state_t, kept out of this header
};

}  // namespace dsdiag::probes
