// ClockReference: the "clock" object of a trace header and of a flight dump — one
// CLOCK_MONOTONIC and one CLOCK_REALTIME reading taken together, and this rank's measured
// wall-clock offset to rank 0:
//
//   "clock":{"mono":1200,"wall":1796026500000000000,"offset":-35000,"offset_err":12000}
//
// Written and read here only; RankClock (rank_clock.h) maps times with it.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace simdjson::dom {
class object;
}  // namespace simdjson::dom

namespace dsdiag::trace {

class JsonLine;

struct ClockReference {
  int64_t mono_ns = 0;         // CLOCK_MONOTONIC, read together with...
  int64_t wall_ns = 0;         // ...CLOCK_REALTIME
  int64_t offset_ns = 0;       // this rank's wall clock minus rank 0's (0 on rank 0)
  int64_t offset_err_ns = -1;  // half the best round trip; -1 when not measured
};

// Appends `"<key>":{"mono":..,"wall":..,"offset":..,"offset_err":..}` to *line.
void AppendClockObject(JsonLine* line, std::string_view key, const ClockReference& clock);

// Reads such an object. A member that is present must be an integer; an absent one keeps
// its default (offset 0, offset_err -1). With `require_pair`, "mono" and "wall" must be
// present. nullopt when the object breaks these rules.
std::optional<ClockReference> ParseClockObject(const simdjson::dom::object& object,
                                               bool require_pair);

}  // namespace dsdiag::trace
