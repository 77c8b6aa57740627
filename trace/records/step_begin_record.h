// The `step_begin` record (docs/trace-format.md, "`step_begin` and `step`"): opens step
// `step` (a common field) at `ts`, with the epoch it belongs to. On disk before the step
// runs, so a rank killed mid-step still says which step it was in. Written by the session
// (Session::BeginStep); read by the step driver and the timeline.
//
//   {"type":"step_begin","ts":5000,"step":3,"epoch":0}
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "trace/record.h"

namespace dsdiag::trace {
class JsonLine;
}  // namespace dsdiag::trace

namespace dsdiag::trace::records {

struct StepBeginKeys {
  static constexpr FieldKey epoch{"epoch"};
};

struct StepBeginRecord {
  static constexpr std::string_view kType = rec::kStepBegin;
  int64_t epoch = 0;
};
void AppendFields(const StepBeginRecord& r, JsonLine* line);

class StepBeginView {
 public:
  explicit StepBeginView(const Record& r) : r_(r) {}
  std::optional<int64_t> epoch() const { return r_.Int(StepBeginKeys::epoch); }

 private:
  const Record& r_;
};

}  // namespace dsdiag::trace::records
