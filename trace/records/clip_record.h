// The `clip` record (docs/trace-format.md, "Other records"): one gradient clip — whether the
// gradients were already unscaled, the total norm it measured and the threshold. Written by
// the trainer and the Python package's clip probe; read by clip-before-unscale.
//
//   {"type":"clip","step":4,"unscaled":false,"norm":91234.5,"max":1.0}
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "trace/record.h"

namespace dsdiag::trace {
class JsonLine;
}  // namespace dsdiag::trace

namespace dsdiag::trace::records {

struct ClipKeys {
  static constexpr FieldKey unscaled{"unscaled"};  // false: clipped while still scaled
  static constexpr FieldKey norm{"norm"};          // the total norm the clip measured
  static constexpr FieldKey max{"max"};            // the threshold
};

struct ClipRecord {
  static constexpr std::string_view kType = rec::kClip;
  bool unscaled = true;
  double norm = 0;
  double max = 0;
};
void AppendFields(const ClipRecord& r, JsonLine* line);

class ClipView {
 public:
  explicit ClipView(const Record& r) : r_(r) {}
  std::optional<bool> unscaled() const { return r_.Bool(ClipKeys::unscaled); }
  std::optional<double> norm() const { return r_.Double(ClipKeys::norm); }
  std::optional<double> max() const { return r_.Double(ClipKeys::max); }

 private:
  const Record& r_;
};

}  // namespace dsdiag::trace::records
