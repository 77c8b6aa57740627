// The `rng` record (docs/trace-format.md, "Other records"): a fingerprint of one random
// generator's state (`cpu`, `cuda:<i>`, `dropout`, `sampler`, ...), why it was taken and the
// stream's seed. Written by the trainer and the Python package's RNG probe; read by
// rng-collision.
//
//   {"type":"rng","step":0,"stream":"cpu","why":"init","seed":42,"h":"9f3c0a..."}
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "trace/record.h"

namespace dsdiag::trace {
class JsonLine;
}  // namespace dsdiag::trace

namespace dsdiag::trace::records {

struct RngKeys {
  static constexpr FieldKey stream{"stream"};
  static constexpr FieldKey why{"why"};  // "init", "epoch", "periodic", "first-use", ...
  static constexpr FieldKey seed{"seed"};
  static constexpr FieldKey h{"h"};  // hash of the generator state, 16 hex digits
};

struct RngRecord {
  static constexpr std::string_view kType = rec::kRng;
  std::string_view stream;
  std::string_view why;
  int64_t seed = 0;
  uint64_t state_hash = 0;
};
void AppendFields(const RngRecord& r, JsonLine* line);

class RngView {
 public:
  explicit RngView(const Record& r) : r_(r) {}
  std::optional<std::string_view> stream() const { return r_.Str(RngKeys::stream); }
  std::optional<std::string_view> why() const { return r_.Str(RngKeys::why); }
  std::optional<int64_t> seed() const { return r_.Int(RngKeys::seed); }
  std::optional<uint64_t> state_hash() const { return r_.Hex(RngKeys::h); }

 private:
  const Record& r_;
};

}  // namespace dsdiag::trace::records
