#include "trace/trace_reader.h"

#include <fcntl.h>
#include <simdjson.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
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

// The parsed document's tape (simdjson's DOM layout, doc/tape.md in simdjson): one 64-bit
// word per scalar, key or bracket, the type in the top byte. Numbers take a second word;
// '{' and '[' hold the index past their matching bracket; strings hold an offset into the
// string buffer, where a 32-bit length precedes the unescaped bytes and a '\0' follows
// them. The record is the root object, at index 1, each member a key word followed by its
// value. Reading the tape directly finds a field for a fraction of what the element
// iterators cost, and answers Int/Str lookups without building elements: records are read
// by the million.
namespace {
namespace tape {

constexpr uint64_t kValueMask = 0x00FFFFFFFFFFFFFF;  // the payload below the type byte
constexpr uint32_t kNotListed = UINT32_MAX;          // Record::Locate: ask the object

inline char Type(uint64_t word) { return static_cast<char>(word >> 56); }

inline std::string_view String(const uint8_t* strings, uint64_t word) {
  const uint8_t* at = strings + (word & kValueMask);
  uint32_t length;
  std::memcpy(&length, at, sizeof length);
  return std::string_view(reinterpret_cast<const char*>(at + sizeof length), length);
}

// Words a value of each type takes; 0 for '{' and '[', which say where they end.
struct Widths {
  uint8_t of[256];
  constexpr Widths() : of() {
    for (int t = 0; t < 256; ++t) of[t] = 1;
    for (unsigned char t : {'l', 'u', 'd'}) of[t] = 2;
    for (unsigned char t : {'{', '['}) of[t] = 0;
  }
};
constexpr Widths kWidths;

// The index of the word after the value at `i`.
inline uint32_t After(const uint64_t* words, uint32_t i) {
  const uint64_t word = words[i];
  const uint32_t width = kWidths.of[word >> 56];
  return width ? i + width : static_cast<uint32_t>(word);
}

// The head of the key `word` points at, as FieldKey::head() gives it: its length, then its
// first bytes, up to 4. The buffer has room past every string (SIMDJSON_PADDING), so one
// load reads them.
inline uint64_t HeadOf(const uint8_t* strings, uint64_t word) {
  uint64_t head;
  std::memcpy(&head, strings + (word & kValueMask), sizeof head);
  const uint32_t length = static_cast<uint32_t>(head);
  return length >= 4 ? head : head & ((uint64_t{1} << (32 + 8 * length)) - 1);
}

// Whether the key `word` points at, whose head matched `key`'s, is `key`: the bytes past
// the first 4 (keys are short: no library call).
inline bool TailIs(const FieldKey& key, const uint8_t* strings, uint64_t word) {
  const std::string_view name = key.name();
  const uint8_t* at = strings + (word & kValueMask) + sizeof(uint32_t);
  for (size_t i = 4; i < name.size(); ++i)
    if (at[i] != static_cast<unsigned char>(name[i])) return false;
  return true;
}

inline bool Is(const FieldKey& key, const uint8_t* strings, uint64_t word) {
  return HeadOf(strings, word) == key.head() && TailIs(key, strings, word);
}

// The tape index of the first member named `key`'s value in the root object; 0 when none.
inline uint32_t Find(const uint64_t* words, const uint8_t* strings, const FieldKey& key) {
  const uint32_t close = static_cast<uint32_t>(words[1]) - 1;  // the object's '}'
  for (uint32_t i = 2; i < close; i = After(words, i + 1))
    if (Is(key, strings, words[i])) return i + 1;
  return 0;
}

// As dom::element::get_int64 / get_double / get_bool / get_string read the value at `i`.
inline bool Int(const uint64_t* words, uint32_t i, int64_t* out) {
  const char type = Type(words[i]);
  if (type == 'l') {
    std::memcpy(out, &words[i + 1], sizeof *out);
    return true;
  }
  if (type != 'u' || words[i + 1] > static_cast<uint64_t>(INT64_MAX)) return false;
  *out = static_cast<int64_t>(words[i + 1]);
  return true;
}

inline bool Double(const uint64_t* words, uint32_t i, double* out) {
  switch (Type(words[i])) {
    case 'd':
      std::memcpy(out, &words[i + 1], sizeof *out);
      return true;
    case 'u':
      *out = static_cast<double>(words[i + 1]);
      return true;
    case 'l':
      *out = static_cast<double>(static_cast<int64_t>(words[i + 1]));
      return true;
    default:
      return false;
  }
}

inline bool Bool(const uint64_t* words, uint32_t i, bool* out) {
  const char type = Type(words[i]);
  if (type != 't' && type != 'f') return false;
  *out = type == 't';
  return true;
}

inline bool String(const uint64_t* words, const uint8_t* strings, uint32_t i,
                   std::string_view* out) {
  if (Type(words[i]) != '"') return false;
  *out = String(strings, words[i]);
  return true;
}

}  // namespace tape
}  // namespace

// A record's members, listed by one pass over them as the reader reads it: each
// key's head (FieldKey) and where its value sits on the tape, plus a small table from a
// head's slot (FieldKey::slot) to the member, so that most lookups compare one word. A slot
// two members share (a clash, or a repeated key) sends its lookups down the list, which
// keeps the first member of a name. Only the first kMaxFields members are listed; a key not
// among them in a longer record is searched on the tape.
class FieldIndex {
 public:
  static constexpr int kMaxFields = 24;

  // Lists the members of `doc`'s root object (a record).
  void Build(const dom::document& doc) {
    words_ = doc.tape.get();
    strings_ = doc.string_buf.get();
    std::memset(slots_, kEmpty, sizeof slots_);
    const uint32_t close = static_cast<uint32_t>(words_[1]) - 1;  // the object's '}'
    int count = 0;  // a local: the byte stores to slots_ would make a member be reloaded
    uint32_t i = 2;
    for (; i < close && count < kMaxFields; i = tape::After(words_, i + 1), ++count) {
      const uint64_t head = tape::HeadOf(strings_, words_[i]);
      heads_[count] = head;
      values_[count] = i + 1;
      uint8_t& slot = slots_[FieldKey::SlotOf(head)];
      slot = slot == kEmpty ? static_cast<uint8_t>(count) : kShared;
    }
    count_ = count;
    complete_ = i >= close;
  }
  const uint64_t* words() const { return words_; }
  const uint8_t* strings() const { return strings_; }

  // The tape index of the first member named `key`'s value; 0 when none.
  uint32_t Locate(const FieldKey& key) const {
    const uint8_t slot = slots_[key.slot()];
    // A listed key would be in its slot: another key there (or none) means it is not listed.
    if (slot < kShared && Matches(slot, key)) return values_[slot];
    if (slot == kShared || !complete_) return Search(key);
    return 0;
  }

 private:
  static constexpr uint8_t kEmpty = 0xFF;
  static constexpr uint8_t kShared = 0xFE;
  static_assert(kMaxFields < kShared);

  // The key word sits just before its value.
  bool Matches(int i, const FieldKey& key) const {
    return heads_[i] == key.head() && tape::TailIs(key, strings_, words_[values_[i] - 1]);
  }
  // The slow way, out of line so that Locate inlines.
  __attribute__((noinline)) uint32_t Search(const FieldKey& key) const {
    for (int i = 0; i < count_; ++i)
      if (Matches(i, key)) return values_[i];
    return complete_ ? 0 : tape::Find(words_, strings_, key);
  }

  const uint64_t* words_ = nullptr;
  const uint8_t* strings_ = nullptr;
  int count_ = 0;
  bool complete_ = true;
  uint8_t slots_[FieldKey::kSlots];  // member index, kEmpty or kShared
  uint64_t heads_[kMaxFields];
  uint32_t values_[kMaxFields];
};

// ---- Record ----

uint32_t Record::Locate(const FieldKey& key) const {
  return fields_ ? fields_->Locate(key) : tape::kNotListed;
}

bool Record::Find(const FieldKey& key, dom::element* value) const {
  // The tape gives no elements (simdjson builds them only from its iterators): it only
  // says whether the object's own lookup, which also takes the first match, can be skipped.
  if (Locate(key) == 0) return false;
  return !object_->at_key(key.name()).get(*value);
}

std::optional<int64_t> Record::Int(FieldKey key) const {
  int64_t v;
  if (const uint32_t at = Locate(key); at != tape::kNotListed) {
    if (at == 0 || !tape::Int(fields_->words(), at, &v)) return std::nullopt;
    return v;
  }
  dom::element e;
  if (!Find(key, &e) || e.get_int64().get(v)) return std::nullopt;
  return v;
}

std::optional<double> Record::Double(FieldKey key) const {
  double v;
  if (const uint32_t at = Locate(key); at != tape::kNotListed) {
    if (at == 0 || !tape::Double(fields_->words(), at, &v)) return std::nullopt;
    return v;
  }
  dom::element e;
  if (!Find(key, &e) || e.get_double().get(v)) return std::nullopt;
  return v;
}

std::optional<bool> Record::Bool(FieldKey key) const {
  bool v;
  if (const uint32_t at = Locate(key); at != tape::kNotListed) {
    if (at == 0 || !tape::Bool(fields_->words(), at, &v)) return std::nullopt;
    return v;
  }
  dom::element e;
  if (!Find(key, &e) || e.get_bool().get(v)) return std::nullopt;
  return v;
}

std::optional<std::string_view> Record::Str(FieldKey key) const {
  std::string_view v;
  if (const uint32_t at = Locate(key); at != tape::kNotListed) {
    if (at == 0 || !tape::String(fields_->words(), fields_->strings(), at, &v)) return std::nullopt;
    return v;
  }
  dom::element e;
  if (!Find(key, &e) || e.get_string().get(v)) return std::nullopt;
  return v;
}

namespace {

// Each byte's value as a hex digit; 0xFF for the bytes that are none.
struct HexDigits {
  uint8_t of[256];
  constexpr HexDigits() : of() {
    for (int c = 0; c < 256; ++c) of[c] = 0xFF;
    for (int d = 0; d < 10; ++d) of['0' + d] = static_cast<uint8_t>(d);
    for (int d = 0; d < 6; ++d) {
      of['a' + d] = static_cast<uint8_t>(10 + d);
      of['A' + d] = static_cast<uint8_t>(10 + d);
    }
  }
};
constexpr HexDigits kHexDigits;

// 16 hex digits, as from_chars in base 16 takes them whole; false for anything else.
bool ParseHex16(std::string_view s, uint64_t* out) {
  if (s.size() != 16) return false;
  uint64_t v = 0;
  uint8_t bad = 0;  // 0xFF's bits survive the OR when any byte is no digit
  for (char c : s) {
    const uint8_t digit = kHexDigits.of[static_cast<unsigned char>(c)];
    bad |= digit;
    v = v << 4 | (digit & 0xF);
  }
  if (bad & 0xF0) return false;
  *out = v;
  return true;
}

}  // namespace

std::optional<uint64_t> Record::Hex(FieldKey key) const {
  const std::optional<std::string_view> s = Str(key);
  uint64_t v;
  if (!s || !ParseHex16(*s, &v)) return std::nullopt;
  return v;
}

bool Record::HexArray(FieldKey key, std::vector<uint64_t>* out) const {
  out->clear();
  if (const uint32_t at = Locate(key); at != tape::kNotListed) {
    // Straight off the tape: the elements lie between the '[' and the ']' before the index
    // the '[' holds.
    const uint64_t* words = fields_->words();
    if (at == 0 || tape::Type(words[at]) != '[') return false;
    const uint32_t close = static_cast<uint32_t>(words[at]) - 1;
    out->reserve(close - at - 1);  // at most: one word per string
    for (uint32_t i = at + 1; i < close; ++i) {
      std::string_view text;
      uint64_t v;
      if (!tape::String(words, fields_->strings(), i, &text) || !ParseHex16(text, &v)) return false;
      out->push_back(v);
    }
    return true;
  }
  dom::element e;
  dom::array array;
  if (!Find(key, &e) || e.get_array().get(array)) return false;
  for (dom::element item : array) {
    std::string_view text;
    uint64_t v;
    if (item.get_string().get(text) || !ParseHex16(text, &v)) return false;
    out->push_back(v);
  }
  return true;
}

bool Record::IntArray(FieldKey key, std::vector<int64_t>* out) const {
  out->clear();
  dom::element e;
  dom::array array;
  if (!Has(key) || !Find(key, &e) || e.get_array().get(array)) return false;
  for (dom::element item : array) {
    int64_t v;
    if (item.get_int64().get(v)) return false;
    out->push_back(v);
  }
  return true;
}

bool Record::StrArray(FieldKey key, std::vector<std::string>* out) const {
  out->clear();
  dom::element e;
  dom::array array;
  if (!Has(key) || !Find(key, &e) || e.get_array().get(array)) return false;
  for (dom::element item : array) {
    std::string_view v;
    if (item.get_string().get(v)) return false;
    out->emplace_back(v);
  }
  return true;
}

bool Record::NumberMembers(FieldKey key, std::vector<NumberMember>* out) const {
  out->clear();
  dom::element e;
  dom::object object;
  if (!Has(key) || !Find(key, &e) || e.get_object().get(object)) return false;
  for (dom::key_value_pair kv : object) {
    const std::string_view name = kv.key;
    const bool seen = std::any_of(out->begin(), out->end(),
                                  [&](const NumberMember& m) { return m.name == name; });
    if (seen) continue;
    NumberMember m;
    m.name = name;
    m.is_number = !kv.value.get_double().get(m.value);
    m.is_int64 = kv.value.type() == dom::element_type::INT64;
    if (m.is_int64) m.int64 = kv.value.get_int64().value_unsafe();
    out->push_back(m);
  }
  return true;
}

bool Record::Has(FieldKey key) const {
  if (const uint32_t at = Locate(key); at != tape::kNotListed) return at != 0;
  dom::element e;
  return Find(key, &e);
}

std::optional<JsonValue> Record::Value(FieldKey key) const {
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
  // `doc`: the line's document, whose root is the record's object. Lists its members in
  // *index.
  bool CheckCommonFields(const LineReader::Line& line, const dom::document& doc,
                         CommonFields* common);
  // The index the checks fill: the one of the record being read.
  FieldIndex* index = nullptr;
  // The next valid event record, parsed into `doc` (null: the parser's own) and `*out`;
  // fills *record but for raw_ and object_.
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
  std::vector<LocatedIssue> issues;
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
  LocatedIssue issue;
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
  return CheckCommonFields(line, doc ? *doc : parser.doc, common);
}

bool TraceReader::State::CheckCommonFields(const LineReader::Line& line, const dom::document& doc,
                                           CommonFields* common) {
  // The members are listed once, for these checks and the record's lookups alike.
  static constexpr FieldKey kType(kFieldType), kTs(kFieldTs), kStep(kFieldStep), kTid(kFieldTid);
  index->Build(doc);
  const uint64_t* words = doc.tape.get();
  const uint8_t* strings = doc.string_buf.get();
  const uint32_t type = index->Locate(kType), ts = index->Locate(kTs), step = index->Locate(kStep),
                 tid = index->Locate(kTid);  // 0: absent
  const auto bad = [&](bool present, const char* kind, std::string_view key) {
    if (!present) {
      AddIssue(line.number, 1, FieldExpected(kind, key), "a record without it");
    } else {
      IssueAtField(line, key, FieldExpected(kind, key));
    }
    return false;
  };
  if (!type || !tape::String(words, strings, type, &common->type))
    return bad(type, "string", kFieldType);
  if (!ts || !tape::Int(words, ts, &common->ts)) return bad(ts, "integer", kFieldTs);
  if (!step || !tape::Int(words, step, &common->step)) return bad(step, "integer", kFieldStep);
  common->tid = 0;
  if (tid && (!tape::Int(words, tid, &common->tid) || common->tid < 0 || common->tid > INT32_MAX))
    return bad(true, "small non-negative integer", kFieldTid);
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
namespace {
std::atomic<int64_t> g_lines_read_by_closed_readers{0};
}  // namespace

TraceReader::~TraceReader() {
  g_lines_read_by_closed_readers.fetch_add(lines_read(), std::memory_order_relaxed);
}

int64_t TraceReader::LinesReadByClosedReaders() {
  return g_lines_read_by_closed_readers.load(std::memory_order_relaxed);
}

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
      valid = CheckCommonFields(*line, parser.doc, &common);
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
    record->fields_ = fields;
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
  return true;
}

const std::optional<TraceHeader>& TraceReader::header() const { return state_->header; }
const std::string& TraceReader::path() const { return state_->path; }
const std::vector<LocatedIssue>& TraceReader::issues() const { return state_->issues; }
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
