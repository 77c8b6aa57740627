// The sample-membership bitmap of a `sampler` record: which of the dataset's N samples a
// rank drew in an epoch, exactly — `size` (N) and `bits`, standard base64 (RFC 4648, padded)
// of ceil(N/8) bytes, bit i (byte i/8, bit i%8) set when sample i was drawn:
//
//   {"type":"sampler",...,"size":64,"bits":"q1VVVVVVVVU="}
//
// Written by probes::records::WriteSampler, read by the shard-overlap analyzer: two ranks'
// bitmaps prove an overlap (or samples no rank drew), where hashes could only say "differs".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dsdiag::trace {

// At most this many samples get a bitmap: 2^20 samples cost 175 KB per rank per epoch.
inline constexpr int64_t kMaxSampleBitmapSize = int64_t{1} << 20;

// The `bits` text for `members` (any order; indices >= size are left out).
std::string EncodeSampleBitmap(const std::vector<uint64_t>& members, int64_t size);

// The sorted sample indices below `size` that `bits` marks; nullopt when `bits` is not
// base64 or holds fewer than `size` bits.
std::optional<std::vector<uint64_t>> DecodeSampleBitmap(std::string_view bits, int64_t size);

}  // namespace dsdiag::trace
