#include "trace/trace_reader.h"

#include <fcntl.h>
#include <simdjson.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstring>

#include "trace/header_parser.h"
#include "trace/json_syntax.h"
#include "trace/line_reader.h"
#include "trace/record_types.h"

namespace dsdiag::trace {
namespace {

namespace dom = simdjson::dom;

// The fields every record carries, pulled out of a parsed line in one pass.
struct CommonFields {
  std::string_view type;
  int64_t ts = 0;
  int64_t step = 0;
  int64_t tid = 0;
};

std::string FieldExpected(const char* kind, std::string_view key) {
  return std::string(kind) + " field \"" + std::string(key) + "\"";
}

}  // namespace

std::string ReadIssue::ToString() const {
  return file + ":" + std::to_string(line) + ":" + std::to_string(column) + ": expected " +
         expected + ", found " + found;
}

// ---- Record ----

std::optional<int64_t> Record::Int(std::string_view key) const {
  int64_t v;
  if (object_->at_key(key).get_int64().get(v)) return std::nullopt;
  return v;
}

std::optional<double> Record::Double(std::string_view key) const {
  double v;
  if (object_->at_key(key).get_double().get(v)) return std::nullopt;
  return v;
}

std::optional<bool> Record::Bool(std::string_view key) const {
  bool v;
  if (object_->at_key(key).get_bool().get(v)) return std::nullopt;
  return v;
}

std::optional<std::string_view> Record::Str(std::string_view key) const {
  std::string_view v;
  if (object_->at_key(key).get_string().get(v)) return std::nullopt;
  return v;
}

std::optional<uint64_t> Record::Hex(std::string_view key) const {
  const std::optional<std::string_view> s = Str(key);
  if (!s || s->size() != 16) return std::nullopt;
  uint64_t v = 0;
  auto r = std::from_chars(s->data(), s->data() + s->size(), v, 16);
  if (r.ec != std::errc() || r.ptr != s->data() + s->size()) return std::nullopt;
  return v;
}

bool Record::Has(std::string_view key) const {
  return object_->at_key(key).error() == simdjson::SUCCESS;
}

std::optional<JsonValue> Record::Value(std::string_view key) const {
  dom::element e;
  if (object_->at_key(key).get(e)) return std::nullopt;
  return ToJsonValue(e);
}

const simdjson::dom::object& Record::object() const { return *object_; }

// ---- TraceReader ----

struct TraceReader::State {
  State(std::string p, int fd) : path(std::move(p)), lines(fd, simdjson::SIMDJSON_PADDING) {}

  bool NextLine(LineReader::Line* line);
  // Parses `line` into `doc` (null: the parser's own) and `*out`, and checks the common
  // fields; false after an issue.
  bool ParseLine(const LineReader::Line& line, dom::document* doc, dom::object* out,
                 CommonFields* common);
  bool CheckCommonFields(const LineReader::Line& line, const dom::object& record,
                         CommonFields* common);
  // The next valid event record, parsed into `doc` and `*out`; fills *record but for raw_
  // and object_.
  bool NextRecord(dom::document* doc, dom::object* out, Record* record, LineReader::Line* line);
  void IssueAt(const LineReader::Line& line, size_t offset, std::string expected);
  // An issue pointing at the value of top-level field `key`.
  void IssueAtField(const LineReader::Line& line, std::string_view key, std::string expected);
  void AddIssue(int64_t line, int64_t column, std::string expected, std::string found,
                bool truncated_tail = false);
  void ReadHeaderLine();

  std::string path;
  LineReader lines;
  dom::parser parser;  // reused for every line: its buffers are allocated once
  dom::object object;  // the current record
  bool header_done = false;
  std::optional<TraceHeader> header;
  std::vector<ReadIssue> issues;
  int64_t issue_count = 0;
  bool truncated_tail = false;
  bool read_error_reported = false;
};

bool TraceReader::State::NextLine(LineReader::Line* line) {
  if (lines.Next(line)) return true;
  if (lines.read_error() != 0 && !read_error_reported) {
    read_error_reported = true;
    AddIssue(lines.lines() + 1, 1, "readable data", std::strerror(lines.read_error()));
  }
  return false;
}

void TraceReader::State::AddIssue(int64_t line, int64_t column, std::string expected,
                                  std::string found, bool truncated) {
  ++issue_count;
  if (issues.size() >= static_cast<size_t>(kMaxIssuesKept)) return;
  ReadIssue issue;
  issue.file = path;
  issue.line = line;
  issue.column = column;
  issue.expected = std::move(expected);
  issue.found = std::move(found);
  issue.truncated_tail = truncated;
  issues.push_back(std::move(issue));
}

void TraceReader::State::IssueAt(const LineReader::Line& line, size_t offset,
                                 std::string expected) {
  AddIssue(line.number, static_cast<int64_t>(offset) + 1, std::move(expected),
           DescribeBytesAt(line.text, offset));
}

void TraceReader::State::IssueAtField(const LineReader::Line& line, std::string_view key,
                                      std::string expected) {
  const ValueSpan span = FindTopLevelValue(line.text, key).value_or(ValueSpan{});
  AddIssue(line.number, static_cast<int64_t>(span.offset) + 1, std::move(expected),
           DescribeValue(line.text, span));
}

bool TraceReader::State::ParseLine(const LineReader::Line& line, dom::document* doc,
                                   dom::object* out, CommonFields* common) {
  if (line.too_long) {
    AddIssue(line.number, static_cast<int64_t>(LineReader::kMaxLineBytes) + 1,
             "a line shorter than " + std::to_string(LineReader::kMaxLineBytes >> 20) + " MiB",
             "a line of " + std::to_string(line.length) + " bytes", !line.has_newline);
    truncated_tail |= !line.has_newline;
    return false;
  }
  if (!line.has_newline) {
    truncated_tail = true;
    AddIssue(line.number, line.length + 1, "'\\n' at end of line (the writer stopped mid-line)",
             "end of file", true);
    return false;
  }
  if (line.text.empty()) {
    AddIssue(line.number, 1, "a record (a JSON object)", "an empty line");
    return false;
  }
  dom::element element;
  // In place: LineReader leaves SIMDJSON_PADDING allocated bytes after every line.
  const simdjson::error_code error =
      (doc ? parser.parse_into_document(*doc, line.text.data(), line.text.size(), false)
           : parser.parse(line.text.data(), line.text.size(), false))
          .get(element);
  if (error) {
    if (std::optional<SyntaxError> e = CheckJsonObjectLine(line.text)) {
      IssueAt(line, e->offset, e->expected);
    } else {
      AddIssue(
          line.number, 1, "valid JSON",
          std::string("what the JSON parser rejects (") + simdjson::error_message(error) + ")");
    }
    return false;
  }
  if (element.get_object().get(*out)) {
    const size_t first = line.text.find_first_not_of(" \t\r");
    IssueAt(line, first == std::string_view::npos ? 0 : first, "a JSON object ('{')");
    return false;
  }
  return CheckCommonFields(line, *out, common);
}

bool TraceReader::State::CheckCommonFields(const LineReader::Line& line, const dom::object& record,
                                           CommonFields* common) {
  // One pass over the members: writers put these first, so it usually stops early.
  dom::element type, ts, step, tid;
  bool has_type = false, has_ts = false, has_step = false, has_tid = false;
  for (dom::key_value_pair kv : record) {
    const std::string_view k = kv.key;
    if (!has_type && k == kFieldType) {
      type = kv.value;
      has_type = true;
    } else if (!has_ts && k == kFieldTs) {
      ts = kv.value;
      has_ts = true;
    } else if (!has_step && k == kFieldStep) {
      step = kv.value;
      has_step = true;
    } else if (!has_tid && k == kFieldTid) {
      tid = kv.value;
      has_tid = true;
    }
    if (has_type && has_ts && has_step && has_tid) break;
  }
  const auto bad = [&](bool present, const char* kind, std::string_view key) {
    if (!present) {
      AddIssue(line.number, 1, FieldExpected(kind, key), "a record without it");
    } else {
      IssueAtField(line, key, FieldExpected(kind, key));
    }
    return false;
  };
  if (!has_type || type.get_string().get(common->type)) return bad(has_type, "string", kFieldType);
  if (!has_ts || ts.get_int64().get(common->ts)) return bad(has_ts, "integer", kFieldTs);
  if (!has_step || step.get_int64().get(common->step)) return bad(has_step, "integer", kFieldStep);
  common->tid = 0;
  if (has_tid && (tid.get_int64().get(common->tid) || common->tid < 0 || common->tid > INT32_MAX)) {
    return bad(true, "small non-negative integer", kFieldTid);
  }
  return true;
}

void TraceReader::State::ReadHeaderLine() {
  header_done = true;
  LineReader::Line line;
  if (!NextLine(&line)) {
    if (!read_error_reported) {
      AddIssue(1, 1, "a header record on line 1", "an empty file");
    }
    return;
  }
  CommonFields common;
  if (!ParseLine(line, nullptr, &object, &common)) return;
  if (common.type != rec::kHeader) {
    IssueAtField(line, kFieldType, "a header record (\"type\":\"header\") on line 1");
    return;
  }
  TraceHeader parsed;
  if (std::optional<FieldProblem> p = ParseHeaderObject(object, line.text, &parsed)) {
    AddIssue(line.number, static_cast<int64_t>(p->offset) + 1, p->expected, p->found);
    return;
  }
  header = std::move(parsed);
}

std::unique_ptr<TraceReader> TraceReader::Open(const std::string& path, std::string* error) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (error) *error = "cannot open trace " + path + ": " + std::strerror(errno);
    return nullptr;
  }
  struct stat st;
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(fd);
    if (error) *error = "cannot read trace " + path + ": it is a directory";
    return nullptr;
  }
  return std::unique_ptr<TraceReader>(new TraceReader(std::make_unique<State>(path, fd)));
}

TraceReader::TraceReader(std::unique_ptr<State> state) : state_(std::move(state)) {}
TraceReader::~TraceReader() = default;

const std::optional<TraceHeader>& TraceReader::ReadHeader() {
  if (!state_->header_done) state_->ReadHeaderLine();
  return state_->header;
}

bool TraceReader::State::NextRecord(dom::document* doc, dom::object* out, Record* record,
                                    LineReader::Line* line) {
  if (!header_done) ReadHeaderLine();
  CommonFields common;
  while (NextLine(line)) {
    if (!ParseLine(*line, doc, out, &common)) continue;
    if (common.type == rec::kHeader) {
      // Two files concatenated, or a restarted writer appending: not an event.
      IssueAtField(*line, kFieldType, "an event record (a header belongs on line 1 only)");
      continue;
    }
    record->type_ = common.type;
    record->type_id_ = RecordTypeId(common.type);
    record->ts_ = common.ts;
    record->step_ = common.step;
    record->tid_ = static_cast<int>(common.tid);
    record->line_ = line->number;
    return true;
  }
  return false;
}

bool TraceReader::Next(Record* out) {
  LineReader::Line line;
  if (!state_->NextRecord(nullptr, &state_->object, out, &line)) return false;
  out->raw_ = line.text;
  out->object_ = &state_->object;
  return true;
}

// What an OwnedRecord holds on to; kept from one NextOwned to the next for its buffers.
struct OwnedRecord::Storage {
  dom::document document;
  dom::object object;
  std::string raw;
};

OwnedRecord::OwnedRecord() = default;
OwnedRecord::~OwnedRecord() = default;
OwnedRecord::OwnedRecord(OwnedRecord&&) noexcept = default;
OwnedRecord& OwnedRecord::operator=(OwnedRecord&&) noexcept = default;

bool TraceReader::NextOwned(OwnedRecord* out) {
  if (!out->storage_) out->storage_ = std::make_unique<OwnedRecord::Storage>();
  OwnedRecord::Storage& storage = *out->storage_;
  LineReader::Line line;
  if (!state_->NextRecord(&storage.document, &storage.object, &out->record_, &line)) return false;
  // type_ points into the document's strings, which stay put; raw_ needs the copy.
  storage.raw.assign(line.text.data(), line.text.size());
  out->record_.raw_ = storage.raw;
  out->record_.object_ = &storage.object;
  return true;
}

const std::optional<TraceHeader>& TraceReader::header() const { return state_->header; }
const std::string& TraceReader::path() const { return state_->path; }
const std::vector<ReadIssue>& TraceReader::issues() const { return state_->issues; }
int64_t TraceReader::issue_count() const { return state_->issue_count; }
bool TraceReader::saw_truncated_tail() const { return state_->truncated_tail; }
int64_t TraceReader::lines_read() const { return state_->lines.lines(); }
int64_t TraceReader::bytes_read() const { return state_->lines.bytes(); }

// ---- ToJsonValue ----

JsonValue ToJsonValue(const dom::element& element) {
  switch (element.type()) {
    case dom::element_type::ARRAY: {
      JsonValue a = JsonValue::Array();
      // The type is known from the switch: value_unsafe() skips the re-check.
      const dom::array array = element.get_array().value_unsafe();
      for (dom::element e : array) a.Push(ToJsonValue(e));
      return a;
    }
    case dom::element_type::OBJECT: {
      JsonValue o = JsonValue::Object();
      const dom::object object = element.get_object().value_unsafe();
      for (dom::key_value_pair kv : object) {
        if (o.Find(kv.key) == nullptr) o.Set(kv.key, ToJsonValue(kv.value));  // first wins
      }
      return o;
    }
    case dom::element_type::INT64: {
      return JsonValue(element.get_int64().value_unsafe());
    }
    case dom::element_type::UINT64: {
      // Past int64: JsonValue holds it as a double rather than wrapping around.
      return JsonValue(static_cast<double>(element.get_uint64().value_unsafe()));
    }
    case dom::element_type::DOUBLE: {
      return JsonValue(element.get_double().value_unsafe());
    }
    case dom::element_type::STRING: {
      return JsonValue(element.get_string().value_unsafe());
    }
    case dom::element_type::BOOL: {
      return JsonValue(element.get_bool().value_unsafe());
    }
    case dom::element_type::NULL_VALUE:
      return JsonValue();
  }
  return JsonValue();
}

}  // namespace dsdiag::trace
