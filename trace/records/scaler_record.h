// The `scaler` record (docs/trace-format.md, "Other records"): what the fp16 loss scaler saw
// and did in one optimizer step. Written by the trainer and the Python package's scaler
// probe; read by scaler-overflow, scaler-desync, clip-before-unscale, the timeline and the
// report.
//
//   {"type":"scaler","step":7,"scale":65536,"inf_local":true,"inf_global":true,
//    "skipped":true,"event":"backoff","norm_scaled":null,"norm":null}
#pragma once

#include <optional>
#include <string_view>

#include "trace/record.h"

namespace dsdiag::trace {
class JsonLine;
}  // namespace dsdiag::trace

namespace dsdiag::trace::records {

struct ScalerKeys {
  static constexpr FieldKey scale{"scale"};          // the scale this step's loss was multiplied by
  static constexpr FieldKey inf_local{"inf_local"};  // this rank's gradients overflowed
  static constexpr FieldKey inf_global{"inf_global"};    // some rank's did (the reduced flag)
  static constexpr FieldKey skipped{"skipped"};          // the optimizer step was skipped
  static constexpr FieldKey event{"event"};              // "growth", "backoff"; absent: neither
  static constexpr FieldKey norm_scaled{"norm_scaled"};  // synced gradients' norm, scaled
  static constexpr FieldKey norm{"norm"};                // the same, unscaled
};

struct ScalerRecord {
  static constexpr std::string_view kType = rec::kScaler;
  double scale = 1;
  bool inf_local = false;
  bool inf_global = false;
  bool skipped = false;
  const char* event = nullptr;  // "growth", "backoff" or null (left out)
  double norm_scaled = 0;       // NaN or inf: written as null
  double norm = 0;
};
void AppendFields(const ScalerRecord& r, JsonLine* line);

class ScalerView {
 public:
  explicit ScalerView(const Record& r) : r_(r) {}
  std::optional<double> scale() const { return r_.Double(ScalerKeys::scale); }
  std::optional<bool> inf_local() const { return r_.Bool(ScalerKeys::inf_local); }
  std::optional<bool> inf_global() const { return r_.Bool(ScalerKeys::inf_global); }
  std::optional<bool> skipped() const { return r_.Bool(ScalerKeys::skipped); }
  std::optional<std::string_view> event() const { return r_.Str(ScalerKeys::event); }
  std::optional<double> norm_scaled() const { return r_.Double(ScalerKeys::norm_scaled); }
  std::optional<double> norm() const { return r_.Double(ScalerKeys::norm); }

 private:
  const Record& r_;
};

}  // namespace dsdiag::trace::records
