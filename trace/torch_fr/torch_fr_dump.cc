#include "trace/torch_fr/torch_fr_dump.h"

#include <simdjson.h>

#include <array>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <utility>

#include "trace/json_from_dom.h"
#include "trace/json_syntax.h"
#include "trace/json_value.h"
#include "trace/torch_fr/pickle_reader.h"
#include "trace/torch_fr/torch_fr_keys.h"

namespace dsdiag::trace {
namespace {

using DK = TorchFrDumpKeys;
using GK = TorchFrGroupKeys;
using SK = TorchFrStatusKeys;
using EK = TorchFrEntryKeys;
using FK = TorchFrFrameKeys;

// A dump of 2,000 entries with stacks is a few MB; far larger is not a dump.
constexpr uintmax_t kMaxDumpBytes = uintmax_t{64} << 20;

// c10::ScalarType's numbering (torch/headeronly/core/ScalarType.h), for the dumps that
// wrote dtypes as numbers before they became c10::toString names.
constexpr std::array<std::string_view, 30> kScalarTypeNames = {"Byte",
                                                               "Char",
                                                               "Short",
                                                               "Int",
                                                               "Long",
                                                               "Half",
                                                               "Float",
                                                               "Double",
                                                               "ComplexHalf",
                                                               "ComplexFloat",
                                                               "ComplexDouble",
                                                               "Bool",
                                                               "QInt8",
                                                               "QUInt8",
                                                               "QInt32",
                                                               "BFloat16",
                                                               "QUInt4x2",
                                                               "QUInt2x4",
                                                               "Bits1x8",
                                                               "Bits2x4",
                                                               "Bits4x2",
                                                               "Bits8",
                                                               "Bits16",
                                                               "Float8_e5m2",
                                                               "Float8_e4m3fn",
                                                               "Float8_e5m2fnuz",
                                                               "Float8_e4m3fnuz",
                                                               "UInt16",
                                                               "UInt32",
                                                               "UInt64"};

// ---- typed reads of one JsonValue (pickled or JSON) ----

std::optional<int64_t> AsInt(const JsonValue* v) {
  if (v == nullptr) return std::nullopt;
  if (v->kind() == JsonValue::Kind::kInt) return v->as_int();
  return std::nullopt;
}

// An integer, or its decimal text (JSON writes pg_status's numbers as strings).
std::optional<int64_t> AsIntOrText(const JsonValue* v) {
  if (auto i = AsInt(v)) return i;
  if (v == nullptr || v->kind() != JsonValue::Kind::kString) return std::nullopt;
  const std::string& s = v->as_string();
  int64_t out = 0;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size() || s.empty()) return std::nullopt;
  return out;
}

const std::string* AsString(const JsonValue* v) {
  return v != nullptr && v->kind() == JsonValue::Kind::kString ? &v->as_string() : nullptr;
}

std::optional<bool> AsBool(const JsonValue* v) {
  if (v == nullptr || v->kind() != JsonValue::Kind::kBool) return std::nullopt;
  return v->as_bool();
}

std::optional<double> AsNumber(const JsonValue* v) {
  if (v == nullptr) return std::nullopt;
  if (v->kind() == JsonValue::Kind::kInt || v->kind() == JsonValue::Kind::kDouble) {
    return v->as_double();
  }
  return std::nullopt;
}

// A short description of what a value is, for messages.
std::string Describe(const JsonValue* v) {
  if (v == nullptr) return "none";
  switch (v->kind()) {
    case JsonValue::Kind::kNull:
      return "None";
    case JsonValue::Kind::kBool:
      return v->as_bool() ? "True" : "False";
    case JsonValue::Kind::kInt:
    case JsonValue::Kind::kDouble:
      return "the number " + v->ToJson();
    case JsonValue::Kind::kString: {
      std::string s = v->as_string().substr(0, 40);
      return "the string " + JsonValue(s).ToJson();
    }
    case JsonValue::Kind::kArray:
      return "a list of " + std::to_string(v->elements().size());
    case JsonValue::Kind::kObject:
      break;
  }
  std::string keys;
  size_t shown = 0;
  for (const auto& [key, value] : v->members()) {
    if (shown++ == 4) {
      keys += ", ...";
      break;
    }
    keys += (keys.empty() ? "" : ", ") + JsonValue(key).ToJson();
  }
  return "a dict with keys " + (keys.empty() ? std::string("(none)") : keys);
}

// ---- one entry ----

// Records why an entry cannot be used (the first problem wins); false, for returning.
// What a reader expected of a member: `integer field "pg_id"`.
std::string FieldOfType(std::string_view type, FieldKey key) {
  std::string out(type);
  if (!out.empty()) out += ' ';
  return out.append("field \"").append(key.name()).append("\"");
}

bool Reject(std::string* problem, std::string_view what) {
  *problem = what;
  return false;
}

bool ReadSizes(const JsonValue* v, std::vector<std::vector<int64_t>>* out) {
  if (v == nullptr) return true;  // absent: no tensors recorded
  if (!v->is_array()) return false;
  for (const JsonValue& shape : v->elements()) {
    if (!shape.is_array()) return false;
    std::vector<int64_t> dims;
    for (const JsonValue& d : shape.elements()) {
      const auto n = AsInt(&d);
      if (!n) return false;
      dims.push_back(*n);
    }
    out->push_back(std::move(dims));
  }
  return true;
}

bool ReadDtypes(const JsonValue* v, std::vector<std::string>* out) {
  if (v == nullptr) return true;
  if (!v->is_array()) return false;
  for (const JsonValue& d : v->elements()) {
    if (const std::string* s = AsString(&d)) {
      out->push_back(*s);
    } else if (const auto n = AsInt(&d)) {
      out->push_back(*n >= 0 && static_cast<size_t>(*n) < kScalarTypeNames.size()
                         ? std::string(kScalarTypeNames[static_cast<size_t>(*n)])
                         : "ScalarType(" + std::to_string(*n) + ")");
    } else {
      return false;
    }
  }
  return true;
}

// Frames that are not {filename, line, name} are left out: a stack is read for what it
// can tell.
std::vector<TorchFrFrame> ReadFrames(const JsonValue* v) {
  std::vector<TorchFrFrame> frames;
  if (v == nullptr || !v->is_array()) return frames;
  for (const JsonValue& f : v->elements()) {
    const std::string* file = AsString(f.Find(FK::filename.name()));
    const std::string* name = AsString(f.Find(FK::name.name()));
    const auto line = AsInt(f.Find(FK::line.name()));
    if (file && name && line) frames.push_back({*file, *line, *name});
  }
  return frames;
}

std::optional<TorchFrState> ParseState(const std::string* s) {
  if (s == nullptr) return std::nullopt;
  if (*s == torch_fr_state::kScheduled) return TorchFrState::kScheduled;
  if (*s == torch_fr_state::kStarted) return TorchFrState::kStarted;
  if (*s == torch_fr_state::kCompleted) return TorchFrState::kCompleted;
  return std::nullopt;
}

// A timestamp field: an integer, None (pickle) or 0 (JSON) when there is none.
bool ReadTime(const JsonValue* v, std::optional<int64_t>* out) {
  if (v == nullptr || v->is_null()) return true;
  const auto t = AsInt(v);
  if (!t) return false;
  if (*t != 0) *out = *t;
  return true;
}

// An optional integer identity field: absent is fine, mistyped is not.
bool ReadOptInt(const JsonValue* v, std::optional<int64_t>* out) {
  if (v == nullptr) return true;
  *out = AsInt(v);
  return out->has_value();
}

// Fields that place the entry: its group and sequence number, name and state.
bool ReadIdentity(const JsonValue& o, TorchFrEntry* e, std::string* problem) {
  const std::string* name = AsString(o.Find(EK::profiling_name.name()));
  if (name == nullptr) return Reject(problem, FieldOfType("string", EK::profiling_name));
  e->profiling_name = *name;
  const auto state = ParseState(AsString(o.Find(EK::state.name())));
  if (!state)
    return Reject(problem, "field \"state\": \"scheduled\", \"started\" or \"completed\"");
  e->state = *state;
  const auto pg_id = AsInt(o.Find(EK::pg_id.name()));
  if (!pg_id) return Reject(problem, FieldOfType("integer", EK::pg_id));
  e->pg_id = *pg_id;
  // process_group: a (name, desc) tuple in pickles, a two-string array in JSON.
  if (const JsonValue* pg = o.Find(EK::process_group.name())) {
    if (!pg->is_array() || pg->elements().size() != 2 || !AsString(&pg->elements()[0]) ||
        !AsString(&pg->elements()[1])) {
      return Reject(problem, FieldOfType("", EK::process_group) + ": (name, desc)");
    }
    e->pg_name = pg->elements()[0].as_string();
    e->pg_desc = pg->elements()[1].as_string();
  }
  const JsonValue* seq = o.Find(EK::collective_seq_id.name());
  if (seq == nullptr) seq = o.Find(EK::seq_id.name());  // torch 2.2 and format 1.x
  const auto seq_id = AsInt(seq);
  if (!seq_id) return Reject(problem, "integer field \"collective_seq_id\" (or \"seq_id\")");
  e->collective_seq_id = *seq_id;
  if (!ReadOptInt(o.Find(EK::record_id.name()), &e->record_id))
    return Reject(problem, FieldOfType("integer", EK::record_id));
  if (!ReadOptInt(o.Find(EK::p2p_seq_id.name()), &e->p2p_seq_id))
    return Reject(problem, FieldOfType("integer", EK::p2p_seq_id));
  if (!ReadOptInt(o.Find(EK::op_id.name()), &e->op_id))
    return Reject(problem, FieldOfType("integer", EK::op_id));
  return true;
}

// What was moved: shapes and dtypes, which a mismatch is judged by.
bool ReadTensors(const JsonValue& o, TorchFrEntry* e, std::string* problem) {
  if (!ReadSizes(o.Find(EK::input_sizes.name()), &e->input_sizes)) {
    return Reject(problem, FieldOfType("", EK::input_sizes) + ": a list of shapes");
  }
  if (!ReadSizes(o.Find(EK::output_sizes.name()), &e->output_sizes)) {
    return Reject(problem, FieldOfType("", EK::output_sizes) + ": a list of shapes");
  }
  e->has_dtypes =
      o.Find(EK::input_dtypes.name()) != nullptr || o.Find(EK::output_dtypes.name()) != nullptr;
  if (!ReadDtypes(o.Find(EK::input_dtypes.name()), &e->input_dtypes)) {
    return Reject(problem, FieldOfType("", EK::input_dtypes) + ": a list of dtype names");
  }
  if (!ReadDtypes(o.Find(EK::output_dtypes.name()), &e->output_dtypes)) {
    return Reject(problem, FieldOfType("", EK::output_dtypes) + ": a list of dtype names");
  }
  return true;
}

bool ReadTimes(const JsonValue& o, TorchFrEntry* e, std::string* problem) {
  if (const JsonValue* us = o.Find(EK::time_created_us.name());
      us != nullptr && !o.Find(EK::time_created_ns.name())) {
    const auto t = AsInt(us);  // torch 2.2 wrote microseconds
    int64_t ns = 0;
    if (!t || __builtin_mul_overflow(*t, int64_t{1000}, &ns)) {
      return Reject(problem, FieldOfType("integer", EK::time_created_us) + " (microseconds)");
    }
    e->time_created_ns = ns;
  } else if (!ReadTime(o.Find(EK::time_created_ns.name()), &e->time_created_ns)) {
    return Reject(problem, FieldOfType("integer", EK::time_created_ns));
  }
  if (!ReadTime(o.Find(EK::time_discovered_started_ns.name()), &e->time_discovered_started_ns)) {
    return Reject(problem, FieldOfType("integer or None", EK::time_discovered_started_ns));
  }
  if (!ReadTime(o.Find(EK::time_discovered_completed_ns.name()),
                &e->time_discovered_completed_ns)) {
    return Reject(problem, FieldOfType("integer or None", EK::time_discovered_completed_ns));
  }
  e->duration_ms = AsNumber(o.Find(EK::duration_ms.name()));
  e->timeout_ms = AsInt(o.Find(EK::timeout_ms.name()));
  return true;
}

std::optional<TorchFrEntry> ParseEntry(const JsonValue& o, std::string* problem) {
  if (!o.is_object()) {
    Reject(problem, "a dict");
    return std::nullopt;
  }
  TorchFrEntry e;
  if (!ReadIdentity(o, &e, problem) || !ReadTensors(o, &e, problem) || !ReadTimes(o, &e, problem)) {
    return std::nullopt;
  }
  e.retired = AsBool(o.Find(EK::retired.name()));
  e.is_p2p = AsBool(o.Find(EK::is_p2p.name()));
  if (const std::string* s = AsString(o.Find(EK::thread_id.name()))) {
    e.thread_id = *s;
  } else if (const auto n = AsInt(o.Find(EK::thread_id.name()))) {
    e.thread_id = std::to_string(*n);
  }
  if (const std::string* s = AsString(o.Find(EK::thread_name.name()))) e.thread_name = *s;
  e.frames = ReadFrames(o.Find(EK::frames.name()));
  return e;
}

void ReadEntries(const JsonValue& list, TorchFrDump* d) {
  size_t index = 0;
  for (const JsonValue& element : list.elements()) {
    std::string problem;
    if (auto entry = ParseEntry(element, &problem)) {
      d->entries.push_back(std::move(*entry));
    } else if (d->entries_skipped++ == 0) {
      d->first_entry_problem = "entries[" + std::to_string(index) + "]: expected " + problem;
    }
    ++index;
  }
}

// ---- the groups ----

// "[0, 1, 3]" as integers; nullopt when it is not such a list.
std::optional<std::vector<int64_t>> ParseRanksText(std::string_view text) {
  std::vector<int64_t> ranks;
  size_t i = 0;
  const auto skip = [&] {
    while (i < text.size() && (text[i] == ' ' || text[i] == ',')) ++i;
  };
  skip();
  if (i >= text.size() || text[i] != '[') return std::nullopt;
  ++i;
  while (true) {
    skip();
    if (i >= text.size()) return std::nullopt;
    if (text[i] == ']') return ranks;
    int64_t r = 0;
    const auto res = std::from_chars(text.data() + i, text.data() + text.size(), r);
    if (res.ec != std::errc()) return std::nullopt;
    ranks.push_back(r);
    i = static_cast<size_t>(res.ptr - text.data());
  }
}

// pg_config: {name: {name, desc, ranks: "[...]"}} from format 2.0; {pg_id: [ranks]} in 1.x.
void ReadGroups(const JsonValue* config, TorchFrDump* d) {
  if (config == nullptr || !config->is_object()) return;
  for (const auto& [key, value] : config->members()) {
    TorchFrGroup g;
    g.key = key;
    if (value.is_array()) {  // format 1.x: the ranks themselves
      g.name = key;
      for (const JsonValue& r : value.elements()) {
        if (const auto n = AsInt(&r)) g.ranks.push_back(*n);
      }
      g.ranks_text = value.ToJson();
    } else if (value.is_object()) {
      if (const std::string* s = AsString(value.Find(GK::name.name()))) g.name = *s;
      if (const std::string* s = AsString(value.Find(GK::desc.name()))) g.desc = *s;
      if (const std::string* s = AsString(value.Find(GK::ranks.name()))) {
        g.ranks_text = *s;
        g.ranks = ParseRanksText(*s).value_or(std::vector<int64_t>{});
      }
    } else {
      continue;
    }
    d->groups.push_back(std::move(g));
  }
}

void ReadGroupStatus(const JsonValue* status, TorchFrDump* d) {
  if (status == nullptr || !status->is_object()) return;
  for (const auto& [pg_id, value] : status->members()) {
    if (!value.is_object()) continue;
    TorchFrGroupStatus s;
    s.pg_id = pg_id;
    s.last_enqueued = AsIntOrText(value.Find(SK::last_enqueued.name()));
    s.last_started = AsIntOrText(value.Find(SK::last_started.name()));
    s.last_completed = AsIntOrText(value.Find(SK::last_completed.name()));
    d->group_status.push_back(std::move(s));
  }
}

void ParseVersion(TorchFrDump* d) {
  const std::string& v = d->version;
  const size_t dot = v.find('.');
  if (dot == std::string::npos) return;
  int major = 0;
  int minor = 0;
  const char* end = v.data() + v.size();
  const auto a = std::from_chars(v.data(), v.data() + dot, major);
  const auto b = std::from_chars(v.data() + dot + 1, end, minor);
  if (a.ec != std::errc() || a.ptr != v.data() + dot || b.ec != std::errc() || b.ptr != end) return;
  d->version_major = major;
  d->version_minor = minor;
}

// ---- issues ----

// Builds the one issue of a rejected file: JSON issues located by line and column, pickle
// issues by byte (line 0: a binary file has no lines).
class Issues {
 public:
  Issues(const std::string& file, std::string_view bytes, TorchFrFormat format, LocatedIssue* out)
      : file_(file), bytes_(bytes), format_(format), out_(out) {}

  void AtByte(size_t offset, std::string expected, std::string found) {
    if (out_ == nullptr) return;
    if (format_ == TorchFrFormat::kJson) {
      *out_ = IssueAt(file_, bytes_, offset, std::move(expected), std::move(found));
    } else {
      *out_ = {file_, 0, 0, std::move(expected), std::move(found), false};
    }
  }

  // A problem with top-level member `key` (the whole dump when it has none).
  void AtField(std::string_view key, std::string expected, std::string found) {
    size_t offset = 0;
    if (format_ == TorchFrFormat::kJson) {
      if (const auto span = FindTopLevelValue(bytes_, key)) {
        offset = span->offset;
      } else {
        offset = bytes_.find('{') == std::string_view::npos ? 0 : bytes_.find('{');
      }
    }
    AtByte(offset, std::move(expected), std::move(found));
  }

 private:
  const std::string& file_;
  std::string_view bytes_;
  TorchFrFormat format_;
  LocatedIssue* out_;
};

constexpr char kExpectedDump[] =
    "a Flight Recorder dump: a dict with \"version\" and \"entries\", \"pg_config\" or "
    "\"pg_status\" (or torch 2.2's list of entries)";

// The dict of format 1.0 and later.
std::optional<TorchFrDump> ReadDumpDict(const JsonValue& root, TorchFrDump d, Issues* issues) {
  if (const std::string* schema = AsString(root.Find(DK::schema.name()))) {
    issues->AtField(DK::schema.name(), kExpectedDump,
                    "a dsdiag file (schema " + JsonValue(*schema).ToJson() + ")");
    return std::nullopt;
  }
  const std::string* version = AsString(root.Find(DK::version.name()));
  const JsonValue* entries = root.Find(DK::entries.name());
  const bool has_any =
      entries || root.Find(DK::pg_config.name()) || root.Find(DK::pg_status.name());
  if (version == nullptr || !has_any) {
    issues->AtField(DK::version.name(), kExpectedDump, Describe(&root));
    return std::nullopt;
  }
  if (entries != nullptr && !entries->is_array()) {
    issues->AtField(DK::entries.name(), "field \"entries\": a list of entries", Describe(entries));
    return std::nullopt;
  }
  d.version = *version;
  ParseVersion(&d);
  if (const std::string* s = AsString(root.Find(DK::comm_lib_version.name()))) {
    d.comm_lib_version = *s;
  } else if (const std::string* n = AsString(root.Find(DK::nccl_version.name()))) {
    d.comm_lib_version = *n;  // format 2.6 spelled it so
  }
  ReadGroups(root.Find(DK::pg_config.name()), &d);
  ReadGroupStatus(root.Find(DK::pg_status.name()), &d);
  if (entries != nullptr) ReadEntries(*entries, &d);
  return d;
}

std::optional<TorchFrDump> ReadDumpValue(const JsonValue& root, TorchFrDump d, Issues* issues) {
  if (root.is_object()) return ReadDumpDict(root, std::move(d), issues);
  if (root.is_array() && d.format == TorchFrFormat::kPickle) {
    ReadEntries(root, &d);  // torch 2.2: the entries alone
    if (d.entries.empty() && d.entries_skipped > 0) {
      issues->AtByte(0, kExpectedDump,
                     "a list whose elements are no entries (" + d.first_entry_problem + ")");
      return std::nullopt;
    }
    return d;
  }
  issues->AtByte(0, kExpectedDump, Describe(&root));
  return std::nullopt;
}

std::optional<JsonValue> ParseJsonText(std::string_view bytes, Issues* issues) {
  if (auto syntax = CheckJsonObjectLine(bytes)) {
    issues->AtByte(syntax->offset, syntax->expected, DescribeBytesAt(bytes, syntax->offset));
    return std::nullopt;
  }
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(simdjson::padded_string(bytes)).get(doc) != simdjson::SUCCESS) {
    issues->AtByte(0, "a JSON object", DescribeBytesAt(bytes, 0));
    return std::nullopt;
  }
  return ToJsonValue(doc);
}

}  // namespace

std::string_view TorchFrFormatName(TorchFrFormat format) {
  return format == TorchFrFormat::kJson ? "json" : "pickle";
}

std::string_view TorchFrStateName(TorchFrState state) {
  switch (state) {
    case TorchFrState::kScheduled:
      return torch_fr_state::kScheduled;
    case TorchFrState::kStarted:
      return torch_fr_state::kStarted;
    case TorchFrState::kCompleted:
      return torch_fr_state::kCompleted;
  }
  return torch_fr_state::kScheduled;
}

std::string_view TorchFrEntry::backend() const {
  const std::string_view name = profiling_name;
  const size_t colon = name.find(':');
  return colon == std::string_view::npos ? std::string_view() : name.substr(0, colon);
}

std::string_view TorchFrEntry::op() const {
  std::string_view name = profiling_name;
  const size_t colon = name.find(':');
  if (colon != std::string_view::npos) name.remove_prefix(colon + 1);
  return name.substr(0, name.find(' '));
}

std::string_view TorchFrEntry::op_detail() const {
  std::string_view name = profiling_name;
  const size_t colon = name.find(':');
  if (colon != std::string_view::npos) name.remove_prefix(colon + 1);
  const size_t space = name.find(' ');
  return space == std::string_view::npos ? std::string_view() : name.substr(space + 1);
}

namespace {
int64_t Numel(const std::vector<std::vector<int64_t>>& shapes) {
  int64_t total = 0;
  for (const auto& shape : shapes) {
    int64_t n = 1;
    for (const int64_t d : shape) {
      // Saturate rather than overflow on nonsense shapes.
      if (d < 0 || (d != 0 && n > INT64_MAX / d)) return INT64_MAX;
      n *= d;
    }
    if (total > INT64_MAX - n) return INT64_MAX;
    total += n;
  }
  return total;
}
}  // namespace

int64_t TorchFrEntry::input_numel() const { return Numel(input_sizes); }
int64_t TorchFrEntry::output_numel() const { return Numel(output_sizes); }

bool TorchFrEntry::is_coalesced_marker() const {
  const std::string_view name = op();
  constexpr std::string_view kSuffix = "_coalesced";
  if (name == "coalesced") return true;
  return name.size() > kSuffix.size() && name.substr(name.size() - kSuffix.size()) == kSuffix &&
         name.front() >= 'A' && name.front() <= 'Z';
}

bool TorchFrDump::records_coalesced_collectives() const {
  return version_major && version_minor &&
         (*version_major > 2 || (*version_major == 2 && *version_minor >= 7));
}

const TorchFrGroup* TorchFrDump::FindGroup(std::string_view pg_name) const {
  for (const TorchFrGroup& g : groups) {
    if (g.key == pg_name) return &g;
  }
  return nullptr;
}

const TorchFrGroupStatus* TorchFrDump::FindStatus(int64_t pg_id) const {
  const std::string key = std::to_string(pg_id);
  for (const TorchFrGroupStatus& s : group_status) {
    if (s.pg_id == key) return &s;
  }
  return nullptr;
}

std::optional<TorchFrFormat> SniffTorchFrFormat(std::string_view bytes) {
  if (bytes.size() >= 2 && static_cast<uint8_t>(bytes[0]) == 0x80 &&
      static_cast<uint8_t>(bytes[1]) >= 2 && static_cast<uint8_t>(bytes[1]) <= 5) {
    return TorchFrFormat::kPickle;
  }
  const size_t first = bytes.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && bytes[first] == '{') return TorchFrFormat::kJson;
  return std::nullopt;
}

std::optional<int> TorchFrRankFromFileName(std::string_view file_name) {
  const size_t slash = file_name.find_last_of('/');
  if (slash != std::string_view::npos) file_name.remove_prefix(slash + 1);
  size_t start = file_name.size();
  while (start > 0 && file_name[start - 1] >= '0' && file_name[start - 1] <= '9') --start;
  const std::string_view digits = file_name.substr(start);
  if (digits.empty()) return std::nullopt;
  int rank = 0;
  const auto r = std::from_chars(digits.data(), digits.data() + digits.size(), rank);
  if (r.ec != std::errc() || r.ptr != digits.data() + digits.size()) return std::nullopt;
  return rank;
}

std::optional<TorchFrDump> ParseTorchFrDump(const std::string& file_name, std::string_view bytes,
                                            LocatedIssue* issue) {
  const std::optional<TorchFrFormat> format = SniffTorchFrFormat(bytes);
  Issues issues(file_name, bytes, format.value_or(TorchFrFormat::kPickle), issue);
  if (!format) {
    issues.AtByte(0, "a Flight Recorder dump (a pickle, first byte 0x80, or a JSON object)",
                  bytes.empty() ? std::string("an empty file") : DescribeBytesAt(bytes, 0));
    return std::nullopt;
  }
  std::optional<JsonValue> root;
  if (*format == TorchFrFormat::kJson) {
    root = ParseJsonText(bytes, &issues);
  } else {
    PickleError error;
    root = ReadPickle(bytes, &error);
    if (!root) issues.AtByte(error.offset, error.expected, error.found);
  }
  if (!root) return std::nullopt;
  TorchFrDump d;
  d.file = file_name;
  d.format = *format;
  d.rank = TorchFrRankFromFileName(file_name);
  return ReadDumpValue(*root, std::move(d), &issues);
}

std::optional<TorchFrDump> ReadTorchFrDumpFile(const std::string& path, LocatedIssue* issue) {
  std::error_code ec;
  const uintmax_t size = std::filesystem::file_size(path, ec);
  if (!ec && size > kMaxDumpBytes) {
    if (issue)
      *issue = {path, 0, 0, "a Flight Recorder dump of at most 64 MiB", "a larger file", false};
    return std::nullopt;
  }
  std::ifstream in(path, std::ios::binary);
  std::string bytes;
  if (in && !ec) {
    bytes.resize(static_cast<size_t>(size));
    in.read(bytes.data(), static_cast<std::streamsize>(size));
    bytes.resize(static_cast<size_t>(in.gcount()));
  }
  if (!in || ec) {
    if (issue) {
      *issue = {path,
                0,
                0,
                "a readable Flight Recorder dump",
                "a file that cannot be read" + (ec ? " (" + ec.message() + ")" : std::string()),
                false};
    }
    return std::nullopt;
  }
  return ParseTorchFrDump(path, bytes, issue);
}

}  // namespace dsdiag::trace
