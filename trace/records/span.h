// What the span records (`step`, `phase`, `coll`, `ckpt`) share: `ts` is the span's start
// and `dur` its length in ns. Readers that only need how far a rank got (rank-died) read
// any of them so.
#pragma once

#include <cstdint>
#include <optional>

#include "trace/record.h"

namespace dsdiag::trace::records {

struct SpanKeys {
  static constexpr FieldKey dur{"dur"};
};

// The span's length; nullopt when the record has no integer `dur`.
inline std::optional<int64_t> SpanDur(const Record& r) { return r.Int(SpanKeys::dur); }

}  // namespace dsdiag::trace::records
