#include "probes/fingerprint.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace dsdiag::probes {

uint64_t FingerprintBytes(const void* data, size_t size) noexcept {
  return XXH3_64bits(data, size);
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
