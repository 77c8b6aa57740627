#include "probes/fingerprint.h"

#include <cstring>

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace dsdiag::probes {

uint64_t FingerprintBytes(const void* data, size_t size) noexcept {
  return XXH3_64bits(data, size);
}

uint64_t SampleFingerprint(const void* data, size_t size) noexcept {
  if (size <= kSampledBytes) return XXH3_64bits(data, size);
  unsigned char sample[kSampledBytes];
  const auto* bytes = static_cast<const unsigned char*>(data);
  const size_t last = size - 64;
  for (size_t i = 0; i < kSampleChunks; ++i)
    std::memcpy(sample + i * 64, bytes + last * i / (kSampleChunks - 1), 64);
  // The size too: a tensor of another length is another tensor.
  return XXH3_64bits_withSeed(sample, sizeof sample, static_cast<uint64_t>(size));
}

Fingerprinter::Fingerprinter() noexcept : state_(XXH3_createState()) { Reset(); }
Fingerprinter::~Fingerprinter() { XXH3_freeState(static_cast<XXH3_state_t*>(state_)); }

void Fingerprinter::Reset() noexcept { XXH3_64bits_reset(static_cast<XXH3_state_t*>(state_)); }

void Fingerprinter::Add(const void* data, size_t size) noexcept {
  XXH3_64bits_update(static_cast<XXH3_state_t*>(state_), data, size);
}

uint64_t Fingerprinter::Digest() const noexcept {
  return XXH3_64bits_digest(static_cast<const XXH3_state_t*>(state_));
}

}  // namespace dsdiag::probes
