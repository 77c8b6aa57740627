#include "trace/header_parser.h"

#include <simdjson.h>

#include <charconv>
#include <climits>

#include "trace/json_from_dom.h"
#include "trace/json_syntax.h"
#include "trace/record_types.h"

namespace dsdiag::trace {
namespace {

namespace dom = simdjson::dom;

// Reads typed fields, turning the first failure into a FieldProblem that points at the
// field's value in the line.
class FieldReader {
 public:
  FieldReader(const dom::object& object, std::string_view line) : object_(object), line_(line) {}

  std::optional<FieldProblem> problem;

  // Each getter returns false and sets `problem` when the field is mistyped, or missing
  // while `required`. A missing optional field leaves *out untouched.
  bool String(std::string_view key, std::string* out, bool required) {
    dom::element e;
    if (!Find(key, required, &e, "string")) return problem == std::nullopt;
    std::string_view v;
    if (e.get_string().get(v)) return Mistyped(key, "string");
    out->assign(v);
    return true;
  }

  bool Int(std::string_view key, int64_t* out, bool required) {
    dom::element e;
    if (!Find(key, required, &e, "integer")) return problem == std::nullopt;
    if (e.get_int64().get(*out)) return Mistyped(key, "integer");
    return true;
  }

  // An int field within [lo, hi].
  bool IntIn(std::string_view key, int* out, bool required, int64_t lo, int64_t hi,
             const char* range) {
    int64_t v = *out;
    if (!Int(key, &v, required)) return false;
    if (v < lo || v > hi) return Fail(key, std::string("\"") + std::string(key) + "\" " + range);
    *out = static_cast<int>(v);
    return true;
  }

  bool StringMap(std::string_view key, std::map<std::string, std::string>* out) {
    dom::element e;
    if (!Find(key, false, &e, "object")) return problem == std::nullopt;
    dom::object o;
    if (e.get_object().get(o)) return Mistyped(key, "object");
    for (dom::key_value_pair kv : o) {
      std::string_view v;
      if (kv.value.get_string().get(v)) {
        return Fail(key, "string values in \"" + std::string(key) + "\"");
      }
      (*out)[std::string(kv.key)] = std::string(v);
    }
    return true;
  }

  // An optional object field; false when absent (problem unset) or mistyped (problem set).
  bool Object(std::string_view key, dom::element* out) {
    if (!Find(key, false, out, "object")) return false;
    if (!out->is_object()) return Mistyped(key, "object");
    return true;
  }

  bool Fail(std::string_view key, std::string expected) {
    FieldProblem p;
    const ValueSpan span = FindTopLevelValue(line_, key).value_or(ValueSpan{});
    p.offset = span.offset;
    p.expected = std::move(expected);
    p.found = DescribeValue(line_, span);
    problem = std::move(p);
    return false;
  }

 private:
  // Looks `key` up; a missing required field sets the problem.
  bool Find(std::string_view key, bool required, dom::element* e, const char* kind) {
    if (object_.at_key(key).get(*e) == simdjson::SUCCESS) return true;
    if (required) {
      problem = FieldProblem{0, std::string(kind) + " field \"" + std::string(key) + "\"",
                             "no such field in the header"};
    }
    return false;
  }

  bool Mistyped(std::string_view key, const char* kind) {
    return Fail(key, std::string(kind) + " field \"" + std::string(key) + "\"");
  }

  const dom::object& object_;
  std::string_view line_;
};

bool ReadClock(FieldReader& r, ClockReference* clock) {
  dom::element e;
  if (!r.Object("clock", &e)) return r.problem == std::nullopt;
  const dom::object o = e.get_object().value_unsafe();  // checked by Object()
  const std::optional<ClockReference> parsed = ParseClockObject(o, /*require_pair=*/false);
  if (!parsed) {
    // The nested field cannot be located by the top-level search: point at "clock".
    r.Fail("clock", "integer members \"mono\", \"wall\", \"offset\", \"offset_err\" in \"clock\"");
    return false;
  }
  *clock = *parsed;
  return true;
}

}  // namespace

std::optional<FieldProblem> ParseHeaderObject(const dom::object& object, std::string_view line,
                                              TraceHeader* header) {
  FieldReader r(object, line);
  if (!r.String("schema", &header->schema, true)) return r.problem;
  if (!IsReadableSchema(header->schema)) {
    r.Fail("schema", "schema \"" + std::string(kSchema) + "\" (major version " +
                         std::to_string(kOldestSchemaMajor) + " to " +
                         std::to_string(kSchemaMajor) + ")");
    return r.problem;
  }
  int64_t pid = 0;
  const bool ok =
      r.String("run_id", &header->run_id, true) &&
      r.IntIn("world_size", &header->world_size, true, 1, INT_MAX, "at least 1") &&
      r.IntIn("rank", &header->rank, true, 0, header->world_size - 1, "within [0, world_size)") &&
      r.IntIn("local_rank", &header->local_rank, false, 0, INT_MAX, "at least 0") &&
      r.String("host", &header->host, false) && r.Int("pid", &pid, false) &&
      r.StringMap("versions", &header->versions) && r.StringMap("env", &header->env);
  if (!ok) return r.problem;
  header->pid = pid;
  dom::element config;
  if (r.Object("config", &config)) {
    header->config = ToJsonValue(config);
  } else if (r.problem) {
    return r.problem;
  }
  if (!ReadClock(r, &header->clock)) return r.problem;
  for (dom::key_value_pair kv : object) {
    if (!IsHeaderField(kv.key) && header->sections.Find(kv.key) == nullptr) {
      header->sections.Set(kv.key, ToJsonValue(kv.value));
    }
  }
  return std::nullopt;
}

}  // namespace dsdiag::trace
