// The `grad` record (docs/trace-format.md, "`grad`"): the gradients after backward, before
// the sync — this rank's global norm and which parameters took no part in this backward.
// Written by GradientProbe (LibTorch) and the Python package's DDP probe; read by
// missing-grad and the timeline.
//
//   {"type":"grad","ts":..,"step":3,"norm":1.73,"n_missing":2,"missing":[14,15]}
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "trace/record.h"

namespace dsdiag::trace {
class JsonLine;
}  // namespace dsdiag::trace

namespace dsdiag::trace::records {

struct GradKeys {
  static constexpr FieldKey norm{"norm"};            // null when non-finite
  static constexpr FieldKey n_missing{"n_missing"};  // parameters with no gradient this backward
  static constexpr FieldKey missing{"missing"};      // their indices, when the set changed
  static constexpr FieldKey nonfinite{"nonfinite"};  // indices holding inf/NaN, when any
};

struct GradRecord {
  static constexpr std::string_view kType = rec::kGradient;
  double norm = 0;  // NaN or inf: written as null; a float32 value in its short form
  int64_t n_missing = 0;
  const std::vector<int>* missing = nullptr;    // written when set
  const std::vector<int>* nonfinite = nullptr;  // written when set and not empty
};
void AppendFields(const GradRecord& r, JsonLine* line);

class GradView {
 public:
  explicit GradView(const Record& r) : r_(r) {}
  std::optional<double> norm() const { return r_.Double(GradKeys::norm); }
  std::optional<int64_t> n_missing() const { return r_.Int(GradKeys::n_missing); }
  bool has_missing() const { return r_.Has(GradKeys::missing); }
  bool missing(std::vector<int64_t>* out) const { return r_.IntArray(GradKeys::missing, out); }
  bool nonfinite(std::vector<int64_t>* out) const { return r_.IntArray(GradKeys::nonfinite, out); }

 private:
  const Record& r_;
};

}  // namespace dsdiag::trace::records
