// The `phase` record (docs/trace-format.md, "`phase`"): one span of a phase of a step (`ts` =
// its start), written when the phase ends, in full mode only (light mode keeps the step
// record's totals). Written by the session (Session::ExitPhase); read by the timeline.
//
//   {"type":"phase","ts":5100,"step":3,"name":"forward","dur":15000000}
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "trace/record.h"
#include "trace/records/span.h"

namespace dsdiag::trace {
class JsonLine;
}  // namespace dsdiag::trace

// The values of `name` (and the keys of the step record's `phases`): the phases a step is
// split into (probes/phase.h).
namespace dsdiag::trace::phase {
inline constexpr std::string_view kData = "data";
inline constexpr std::string_view kForward = "forward";
inline constexpr std::string_view kBackward = "backward";
inline constexpr std::string_view kSync = "sync";
inline constexpr std::string_view kOptimizer = "optimizer";
inline constexpr std::string_view kCheckpoint = "checkpoint";
// A probe's "phase" outside any phase (flight dumps, error records), never a `name`.
inline constexpr std::string_view kNone = "none";
// v3: the order of a `step` record's per-phase arrays (`phases`, `cpu`, `runq`). A phase
// added later goes at the end, so that an older trace's arrays keep their meaning.
inline constexpr std::string_view kStepOrder[] = {kData, kForward,   kBackward,
                                                  kSync, kOptimizer, kCheckpoint};
inline constexpr size_t kStepOrderCount = sizeof(kStepOrder) / sizeof(kStepOrder[0]);
}  // namespace dsdiag::trace::phase

namespace dsdiag::trace::records {

struct PhaseKeys {
  static constexpr FieldKey name{"name"};  // trace::phase (above)
  static constexpr FieldKey dur = SpanKeys::dur;
};

struct PhaseRecord {
  static constexpr std::string_view kType = rec::kPhase;
  std::string_view name;
  int64_t dur = 0;
};
void AppendFields(const PhaseRecord& r, JsonLine* line);

class PhaseView {
 public:
  explicit PhaseView(const Record& r) : r_(r) {}
  std::optional<std::string_view> name() const { return r_.Str(PhaseKeys::name); }
  std::optional<int64_t> dur() const { return r_.Int(PhaseKeys::dur); }

 private:
  const Record& r_;
};

}  // namespace dsdiag::trace::records
