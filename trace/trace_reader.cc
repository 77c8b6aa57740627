#include "trace/trace_reader.h"

#include <fcntl.h>
#include <simdjson.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
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

// A key's first 8 bytes as one word, zero past its end: most keys fit, so comparing two
// keys is comparing two words (and the lengths).
uint64_t KeyHead(std::string_view key) {
  const auto* p = reinterpret_cast<const unsigned char*>(key.data());
  const size_t n = key.size();
  uint64_t head;
  if (n >= 8) {
    std::memcpy(&head, p, 8);
  } else if (n >= 4) {
    // Two 4-byte loads that overlap: the shared bytes are the same either way.
    uint32_t lo, hi;
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + n - 4, 4);
    head = lo | uint64_t{hi} << (8 * (n - 4));
  } else if (n > 0) {
    head =
        uint64_t{p[0]} | uint64_t{p[n / 2]} << (8 * (n / 2)) | uint64_t{p[n - 1]} << (8 * (n - 1));
  } else {
    head = 0;
  }
  return head;
}

// The same for a key in a parsed document's string buffer, which has room past every string
// (SIMDJSON_PADDING): one load, then a mask.
uint64_t ParsedKeyHead(std::string_view key) {
  uint64_t head;
  std::memcpy(&head, key.data(), 8);
  return key.size() >= 8 ? head : head & ((uint64_t{1} << (8 * key.size())) - 1);
}

constexpr uint64_t LiteralHead(std::string_view key) {
  uint64_t head = 0;
  for (size_t i = 0; i < key.size() && i < 8; ++i)
    head |= uint64_t{static_cast<unsigned char>(key[i])} << (8 * i);
  return head;
}

}  // namespace

// A record's top-level fields in order, the first kMaxFields of them.
class FieldIndex {
 public:
  static constexpr int kMaxFields = 24;

  void Clear() {
    count_ = 0;
    complete_ = true;
  }
  // False once full (then complete() is false).
  bool Add(std::string_view key, uint64_t head, const dom::element& value) {
    if (count_ == kMaxFields) {
      complete_ = false;
      return false;
    }
    heads_[count_] = head;
    sizes_[count_] = static_cast<uint32_t>(key.size());
    keys_[count_] = key.data();
    values_[count_] = value;
    ++count_;
    return true;
  }
  void MarkIncomplete() { complete_ = false; }
  // The first field named `key`; null when not listed.
  const dom::element* Find(std::string_view key) const {
    const uint64_t head = KeyHead(key);
    for (int i = 0; i < count_; ++i) {
      if (heads_[i] == head && sizes_[i] == key.size() &&
          (key.size() <= 8 || std::memcmp(keys_[i] + 8, key.data() + 8, key.size() - 8) == 0))
        return &values_[i];
    }
    return nullptr;
  }
  // Every field is listed: a key Find misses is absent.
  bool complete() const { return complete_; }

 private:
  int count_ = 0;
  bool complete_ = true;
  uint64_t heads_[kMaxFields];
  uint32_t sizes_[kMaxFields];
  const char* keys_[kMaxFields];
  dom::element values_[kMaxFields];
};

std::string ReadIssue::ToString() const {
  return file + ":" + std::to_string(line) + ":" + std::to_string(column) + ": expected " +
         expected + ", found " + found;
}

// ---- Record ----

bool Record::Find(std::string_view key, dom::element* value) const {
  if (fields_ != nullptr) {
    if (const dom::element* e = fields_->Find(key)) {
      *value = *e;
      return true;
    }
    if (fields_->complete()) return false;
  }
  return !object_->at_key(key).get(*value);
}

std::optional<int64_t> Record::Int(std::string_view key) const {
  dom::element e;
  int64_t v;
  if (!Find(key, &e) || e.get_int64().get(v)) return std::nullopt;
  return v;
}

std::optional<double> Record::Double(std::string_view key) const {
  dom::element e;
  double v;
  if (!Find(key, &e) || e.get_double().get(v)) return std::nullopt;
  return v;
}

std::optional<bool> Record::Bool(std::string_view key) const {
  dom::element e;
  bool v;
  if (!Find(key, &e) || e.get_bool().get(v)) return std::nullopt;
  return v;
}

std::optional<std::string_view> Record::Str(std::string_view key) const {
  dom::element e;
  std::string_view v;
  if (!Find(key, &e) || e.get_string().get(v)) return std::nullopt;
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
  dom::element e;
  return Find(key, &e);
}

std::optional<JsonValue> Record::Value(std::string_view key) const {
  dom::element e;
  if (!Find(key, &e)) return std::nullopt;
  return ToJsonValue(e);
}

const simdjson::dom::object& Record::object() const { return *object_; }

// ---- TraceReader ----

struct TraceReader::State {
  State(std::string p, std::unique_ptr<ByteSource> source)
      : path(std::move(p)), lines(std::move(source), simdjson::SIMDJSON_PADDING) {
    parser.threaded = false;  // parse_many's look-ahead thread: one batch per block anyway
  }

  bool NextLine(LineReader::Line* line);
  // Parses `line` into `doc` (null: the parser's own) and `*out`, and checks the common
  // fields; false after an issue.
  bool ParseLine(const LineReader::Line& line, dom::document* doc, dom::object* out,
                 CommonFields* common);
  bool CheckCommonFields(const LineReader::Line& line, const dom::object& record,
                         CommonFields* common);
  // The index the checks fill: the one of the record being read.
  FieldIndex* index = nullptr;
  // The next valid event record, parsed into `doc` and `*out`; fills *record but for raw_
  // and object_.
  bool NextRecord(dom::document* doc, dom::object* out, FieldIndex* fields, Record* record,
                  LineReader::Line* line);
  // Splits off the open block's next line.
  void NextBlockLine(LineReader::Line* line);
  // Parses the open block as one document stream (see `streaming`).
  void StartStream();
  // The next line of the open block, from its document stream, into *out. False when the
  // stream cannot vouch for that line (a parse error, a line that is not exactly one
  // object, the stream's end): the rest of the block then goes line by line, so that its
  // issues read exactly as they do for a line parsed alone.
  bool NextStreamLine(LineReader::Line* line, dom::object* out);
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
  FieldIndex fields;   // its fields
  // Complete lines read as one block (LineReader::NextBlock) and, while `streaming`, parsed
  // as one document stream: a parser call per line costs more than the parse of a short line.
  std::string_view block;
  size_t block_pos = 0;  // the block's first line not handed out yet
  bool streaming = false;
  bool doc_taken = false;  // `stream_doc` was handed out: advance before looking again
  dom::document_stream stream;
  dom::document_stream::iterator stream_doc;
  bool header_done = false;
  std::optional<TraceHeader> header;
  std::vector<ReadIssue> issues;
  int64_t issue_count = 0;
  bool truncated_tail = false;
  bool read_error_reported = false;
  bool tail_issue_reported = false;
};

bool TraceReader::State::NextLine(LineReader::Line* line) {
  if (lines.Next(line)) return true;
  if (lines.read_error() != 0 && !read_error_reported) {
    read_error_reported = true;
    std::string why = lines.source().error();  // what a decoder found wrong
    if (why.empty()) why = std::strerror(lines.read_error());
    AddIssue(lines.lines() + 1, 1, "readable data", std::move(why));
  } else if (!lines.source().tail_issue().empty() && !tail_issue_reported) {
    // A compressed trace cut inside a block (a short write, like a partial last line):
    // every line before it was delivered.
    tail_issue_reported = true;
    truncated_tail = true;
    AddIssue(lines.lines() + 1, 1, "a whole zstd block", std::string(lines.source().tail_issue()),
             /*truncated_tail=*/true);
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
  // One pass over the members, listing them for the record's field lookups on the way
  // ("tid" is absent from most records, so the pass goes to the end anyway).
  constexpr uint64_t kTypeHead = LiteralHead(kFieldType), kTsHead = LiteralHead(kFieldTs),
                     kStepHead = LiteralHead(kFieldStep), kTidHead = LiteralHead(kFieldTid);
  dom::element type, ts, step, tid;
  bool has_type = false, has_ts = false, has_step = false, has_tid = false;
  index->Clear();
  for (dom::key_value_pair kv : record) {
    const std::string_view k = kv.key;
    const uint64_t head = ParsedKeyHead(k);
    const bool listed = index->Add(k, head, kv.value);
    static_assert(kFieldTs.size() == 2 && kFieldTid.size() == 3 && kFieldType.size() == 4 &&
                  kFieldStep.size() == 4);
    switch (k.size()) {
      case 2:
        if (!has_ts && head == kTsHead) {
          ts = kv.value;
          has_ts = true;
        }
        break;
      case 3:
        if (!has_tid && head == kTidHead) {
          tid = kv.value;
          has_tid = true;
        }
        break;
      case 4:
        if (!has_type && head == kTypeHead) {
          type = kv.value;
          has_type = true;
        } else if (!has_step && head == kStepHead) {
          step = kv.value;
          has_step = true;
        }
        break;
      default:
        break;
    }
    if (!listed && has_type && has_ts && has_step && has_tid) break;
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
  index = &fields;
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
  auto source = OpenByteSource(path, error);  // plain, or .zst decoded on the fly
  if (!source) return nullptr;
  return std::unique_ptr<TraceReader>(
      new TraceReader(std::make_unique<State>(path, std::move(source))));
}

TraceReader::TraceReader(std::unique_ptr<State> state) : state_(std::move(state)) {}
TraceReader::~TraceReader() = default;

const std::optional<TraceHeader>& TraceReader::ReadHeader() {
  if (!state_->header_done) state_->ReadHeaderLine();
  return state_->header;
}

bool TraceReader::State::NextRecord(dom::document* doc, dom::object* out, FieldIndex* fields,
                                    Record* record, LineReader::Line* line) {
  if (!header_done) ReadHeaderLine();
  index = fields;
  CommonFields common;
  for (;;) {
    bool valid;
    // The stream parses into the parser's own document: not for an OwnedRecord.
    if (streaming && doc == nullptr && NextStreamLine(line, out)) {
      valid = CheckCommonFields(*line, *out, &common);
    } else {
      streaming = false;
      if (block_pos < block.size()) {
        NextBlockLine(line);
      } else if (lines.NextBlock(&block)) {
        block_pos = 0;
        if (doc == nullptr) StartStream();
        continue;
      } else if (!NextLine(line)) {
        return false;
      }
      valid = ParseLine(*line, doc, out, &common);
    }
    if (!valid) continue;
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
}

void TraceReader::State::NextBlockLine(LineReader::Line* line) {
  // A block ends with '\n', so every line in it has one.
  const char* begin = block.data() + block_pos;
  const char* nl = static_cast<const char*>(std::memchr(begin, '\n', block.size() - block_pos));
  line->text = std::string_view(begin, static_cast<size_t>(nl - begin));
  line->length = static_cast<int64_t>(line->text.size());
  line->number = lines.NumberLine();
  line->has_newline = true;
  line->too_long = false;
  block_pos = static_cast<size_t>(nl + 1 - block.data());
}

void TraceReader::State::StartStream() {
  // In place, like a single line: LineReader leaves SIMDJSON_PADDING bytes after the block.
  // One batch for the whole block (no look-ahead thread): the batch size is at least its size.
  streaming =
      !parser
           .parse_many(block.data(), block.size(), std::max(block.size(), LineReader::kBlockBytes))
           .get(stream);
  if (!streaming) return;
  stream_doc = stream.begin();
  doc_taken = false;
}

namespace {
// JSON whitespace but the line break.
bool IsBlank(char c) { return c == ' ' || c == '\t' || c == '\r'; }
}  // namespace

bool TraceReader::State::NextStreamLine(LineReader::Line* line, dom::object* out) {
  if (doc_taken) ++stream_doc;  // parses the next document over the one handed out
  doc_taken = false;
  if (!(stream_doc != stream.end()) || block_pos == block.size()) return false;
  dom::element root;
  if ((*stream_doc).get(root) || root.get_object().get(*out)) return false;
  // The document must be the line's only content: a line holding half a record, two
  // records or none would read differently alone.
  const char* text = block.data();
  const size_t start = stream_doc.current_index();
  const char* nl =
      static_cast<const char*>(std::memchr(text + block_pos, '\n', block.size() - block_pos));
  const size_t line_end = static_cast<size_t>(nl - text);
  if (start < block_pos || start >= line_end) return false;
  for (size_t i = block_pos; i < start; ++i)
    if (!IsBlank(text[i])) return false;
  // source() ends at the object's closing '}'.
  size_t end = start + stream_doc.source().size();
  if (end > line_end) return false;
  while (end < line_end && IsBlank(text[end])) ++end;
  if (end != line_end) return false;
  line->text = std::string_view(text + block_pos, line_end - block_pos);
  line->length = static_cast<int64_t>(line->text.size());
  line->number = lines.NumberLine();
  line->has_newline = true;
  line->too_long = false;
  block_pos = line_end + 1;
  doc_taken = true;
  return true;
}

bool TraceReader::Next(Record* out) {
  LineReader::Line line;
  if (!state_->NextRecord(nullptr, &state_->object, &state_->fields, out, &line)) return false;
  out->raw_ = line.text;
  out->object_ = &state_->object;
  out->fields_ = &state_->fields;
  return true;
}

// What an OwnedRecord holds on to; kept from one NextOwned to the next for its buffers.
struct OwnedRecord::Storage {
  dom::document document;
  dom::object object;
  FieldIndex fields;
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
  if (!state_->NextRecord(&storage.document, &storage.object, &storage.fields, &out->record_,
                          &line)) {
    return false;
  }
  // type_ points into the document's strings, which stay put; raw_ needs the copy.
  storage.raw.assign(line.text.data(), line.text.size());
  out->record_.raw_ = storage.raw;
  out->record_.object_ = &storage.object;
  out->record_.fields_ = &storage.fields;
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
