#include "trace/clock_reference.h"

#include <simdjson.h>

#include "trace/json_line.h"

namespace dsdiag::trace {
namespace {

// false when `key` is present and not an integer; *present says whether it is there.
bool ReadMember(const simdjson::dom::object& o, std::string_view key, int64_t* out, bool* present) {
  simdjson::dom::element e;
  *present = o.at_key(key).get(e) == simdjson::SUCCESS;
  if (!*present) return true;
  return e.get_int64().get(*out) == simdjson::SUCCESS;
}

}  // namespace

void AppendClockObject(JsonLine* line, std::string_view key, const ClockReference& clock) {
  line->BeginObject(key)
      .Field("mono", clock.mono_ns)
      .Field("wall", clock.wall_ns)
      .Field("offset", clock.offset_ns)
      .Field("offset_err", clock.offset_err_ns)
      .EndObject();
}

std::optional<ClockReference> ParseClockObject(const simdjson::dom::object& object,
                                               bool require_pair) {
  ClockReference clock;
  bool mono = false, wall = false, present = false;
  if (!ReadMember(object, "mono", &clock.mono_ns, &mono) ||
      !ReadMember(object, "wall", &clock.wall_ns, &wall) ||
      !ReadMember(object, "offset", &clock.offset_ns, &present) ||
      !ReadMember(object, "offset_err", &clock.offset_err_ns, &present))
    return std::nullopt;
  if (require_pair && !(mono && wall)) return std::nullopt;
  return clock;
}

}  // namespace dsdiag::trace
