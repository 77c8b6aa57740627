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

#include "trace/compact_records.h"
#include "trace/field_index.h"
#include "trace/header_parser.h"
#include "trace/json_syntax.h"
#include "trace/line_reader.h"
#include "trace/owned_record_storage.h"
#include "trace/reader_pool.h"
#include "trace/record_tape.h"
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

struct TraceReader::State {
  State(std::string p, std::unique_ptr<ByteSource> source)
      : path(std::move(p)), lines(std::move(source), simdjson::SIMDJSON_PADDING) {}

  // The parser, made on first use unless a pool lent one (Resume).
  dom::parser& Parser() {
    if (!parser) AdoptParser(std::make_unique<dom::parser>());
    return *parser;
  }
  void AdoptParser(std::unique_ptr<dom::parser> p) {
    parser = std::move(p);
    parser->threaded = false;  // parse_many's look-ahead thread: one batch per block anyway
  }
  // Drops the open block and its document stream (they point into the buffers).
  void ForgetBlock() {
    block = {};
    block_pos = 0;
    streaming = false;
    doc_taken = false;
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
  static void FillRecord(const CommonFields& common, const LineReader::Line& line,
                         FieldIndex* fields, Record* record);

  std::string path;
  LineReader lines;
  // Reused for every line: its buffers are allocated once (lent out while suspended).
  std::unique_ptr<dom::parser> parser;
  dom::object object;  // the current record
  // Its fields: lent out while suspended, like the parser (376 bytes a reader).
  std::unique_ptr<FieldIndex> fields;
  FieldIndex& Fields() {
    if (!fields) fields = std::make_unique<FieldIndex>();
    return *fields;
  }
  // Complete lines read as one block (LineReader::NextBlock) and, while `streaming`, parsed
  // as one document stream: a parser call per line costs more than the parse of a short line.
  std::string_view block;
  size_t block_pos = 0;  // the block's first line not handed out yet
  bool streaming = false;
  bool doc_taken = false;  // `stream_doc` was handed out: advance before looking again
  dom::document_stream stream;
  dom::document_stream::iterator stream_doc;
  bool header_done = false;
  // Made by ReadHeaderLine only: a step driver holds a reader per rank and skips line 1
  // (SkipHeader), and an empty optional is 464 bytes of each.
  std::unique_ptr<std::optional<TraceHeader>> header;
  std::vector<LocatedIssue> issues;
  int64_t issue_count = 0;
  bool truncated_tail = false;
  bool read_error_reported = false;
  bool tail_issue_reported = false;
  // v2's compact records and the v1 lines they stand for, handed out before the next line.
  // v2 traces only (null for v1): 160 bytes a reader, of every rank a driver holds.
  std::unique_ptr<CompactRecordExpander> expander;
  void SetSchemaMajor(int major) {
    if (major < 2) return;  // v1, or a header not read: nothing to expand
    expander = std::make_unique<CompactRecordExpander>();
    expander->SetSchemaMajor(major);
  }
  std::vector<std::string> expanded;
  size_t expanded_next = 0;
  int64_t expanded_line = 0;  // the compact record's line
  // The last record handed out came from `expanded`: Suspend cannot rewind to it (its line
  // would expand again, its first records twice).
  bool last_record_expanded = false;
  // The last line the expander saw: a line read again after Suspend's rewind is not shown
  // twice (the expander's state already holds it).
  int64_t observed_line = 0;
  // Not `parser`: that one holds the open block's stream. Made on first use unless a pool
  // lent one; given back with the rest on Suspend (a v2 reader at every rank of a large run
  // would otherwise keep one each).
  std::unique_ptr<dom::parser> expand_parser;
  dom::parser& ExpandParser() {
    if (!expand_parser) expand_parser = std::make_unique<dom::parser>();
    return *expand_parser;
  }
  // The next expanded line parsed into `doc` (null: expand_parser's own); false after an issue.
  bool NextExpanded(dom::document* doc, dom::object* out, LineReader::Line* line,
                    CommonFields* common);
  // The line of the last record handed out (null: none since the last resume), where a
  // Suspend rewinds to.
  const char* last_record_text = nullptr;
  int64_t last_record_line = 0;
  bool suspended = false;
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
      (doc ? Parser().parse_into_document(*doc, line.text.data(), line.text.size(), false)
           : Parser().parse(line.text.data(), line.text.size(), false))
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
  return CheckCommonFields(line, doc ? *doc : parser->doc, common);
}

bool TraceReader::State::CheckCommonFields(const LineReader::Line& line, const dom::document& doc,
                                           CommonFields* common) {
  // One walk finds these four; the record's other members are listed at its first lookup.
  index->Bind(doc);
  const uint64_t* words = doc.tape.get();
  const uint8_t* strings = doc.string_buf.get();
  const auto [type, ts, step, tid] = index->LocateCommon();  // 0: absent
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
  index = &Fields();
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
  SetSchemaMajor(TraceSchemaMajor(parsed.schema));
  header = std::make_unique<std::optional<TraceHeader>>(std::move(parsed));
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

void TraceReader::SkipHeader(const TraceHeader& known) {
  State& s = *state_;
  if (s.header_done) return;
  s.header_done = true;
  LineReader::Line line;
  // An unreadable line 1 reads as it does for ReadHeader: the loader saw a header there.
  if (!s.NextLine(&line) && !s.read_error_reported) {
    s.AddIssue(1, 1, "a header record on line 1", "an empty file");
  }
  s.SetSchemaMajor(TraceSchemaMajor(known.schema));
}

const std::optional<TraceHeader>& TraceReader::ReadHeader() {
  if (!state_->header_done) state_->ReadHeaderLine();
  return header();
}

bool TraceReader::State::NextRecord(dom::document* doc, dom::object* out, FieldIndex* fields,
                                    Record* record, LineReader::Line* line) {
  if (!header_done) ReadHeaderLine();
  suspended = false;
  last_record_text = nullptr;
  index = fields;
  CommonFields common;
  for (;;) {
    bool valid;
    if (expanded_next < expanded.size()) {
      if (!NextExpanded(doc, out, line, &common)) continue;
      FillRecord(common, *line, fields, record);
      last_record_expanded = true;
      return true;
    }
    // The stream parses into the parser's own document: not for an OwnedRecord.
    if (streaming && doc == nullptr && NextStreamLine(line, out)) {
      valid = CheckCommonFields(*line, parser->doc, &common);
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
    FillRecord(common, *line, fields, record);
    last_record_text = line->text.data();
    last_record_line = line->number;
    last_record_expanded = false;
    if (!expander || line->number <= observed_line) return true;
    observed_line = line->number;
    record->raw_ = line->text;
    record->object_ = out;
    std::string problem;
    expanded.clear();
    expanded_next = 0;
    if (expander->Observe(*record, &expanded, &problem) == CompactRecordExpander::Verdict::kDeliver)
      return true;
    if (!problem.empty()) IssueAtField(*line, kFieldType, std::move(problem));
    expanded_line = line->number;
  }
}

void TraceReader::State::FillRecord(const CommonFields& common, const LineReader::Line& line,
                                    FieldIndex* fields, Record* record) {
  record->type_ = common.type;
  record->type_id_ = Record::kTypeIdNotYet;
  record->ts_ = common.ts;
  record->step_ = common.step;
  record->tid_ = static_cast<int>(common.tid);
  record->line_ = line.number;
  record->fields_ = fields;
}

bool TraceReader::State::NextExpanded(dom::document* doc, dom::object* out, LineReader::Line* line,
                                      CommonFields* common) {
  const std::string& text = expanded[expanded_next++];
  line->text = text;
  line->length = static_cast<int64_t>(text.size());
  line->number = expanded_line;
  line->has_newline = true;
  line->too_long = false;
  dom::element element;
  dom::parser& p = ExpandParser();
  const bool bad = (doc ? p.parse_into_document(*doc, text.data(), text.size())
                        : p.parse(text.data(), text.size()))
                       .get(element) ||
                   element.get_object().get(*out);
  if (bad) {  // the expander writes JSON objects: never seen
    AddIssue(line->number, 1, "a compact record that expands to JSON objects", "one that does not");
    return false;
  }
  return CheckCommonFields(*line, doc ? *doc : p.doc, common);
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
      !Parser()
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
  if (!state_->NextRecord(nullptr, &state_->object, &state_->Fields(), out, &line)) return false;
  out->raw_ = line.text;
  out->object_ = &state_->object;
  return true;
}

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

bool TraceReader::Suspend(ReaderPool* pool, bool close_file) {
  State& s = *state_;
  if (!s.suspended) {
    if (s.last_record_text == nullptr || s.last_record_expanded) return false;
    // The record's line starts in the buffer: rewind the file to it, one line fewer read.
    const int64_t offset = s.lines.OffsetOf(s.last_record_text);
    if (!s.lines.Rewind(offset, s.last_record_line - 1, close_file)) return false;
    s.ForgetBlock();
    s.last_record_text = nullptr;
    s.suspended = true;
  }
  // Also when suspended already: a Resume without a read since may have taken buffers.
  if (s.lines.holds_buffer()) pool->GiveBuffer(s.lines.TakeBuffer());
  if (s.parser) pool->GiveParser(std::move(s.parser));
  if (s.expand_parser) pool->GiveParser(std::move(s.expand_parser));
  if (s.fields) pool->GiveFields(std::move(s.fields));
  return true;
}

void TraceReader::Resume(ReaderPool* pool) {
  State& s = *state_;
  if (!s.lines.holds_buffer()) s.lines.GiveBuffer(pool->TakeBuffer());
  if (!s.parser) {
    if (std::unique_ptr<dom::parser> lent = pool->TakeParser()) s.AdoptParser(std::move(lent));
  }
  if (!s.expand_parser && s.expander) s.expand_parser = pool->TakeParser();
  if (!s.fields) s.fields = pool->TakeFields();
}

bool TraceReader::suspended() const { return state_->suspended; }

const std::optional<TraceHeader>& TraceReader::header() const {
  static const std::optional<TraceHeader> kNone;
  return state_->header ? *state_->header : kNone;
}
const std::string& TraceReader::path() const { return state_->path; }
const std::vector<LocatedIssue>& TraceReader::issues() const { return state_->issues; }
int64_t TraceReader::issue_count() const { return state_->issue_count; }
bool TraceReader::saw_truncated_tail() const { return state_->truncated_tail; }
int64_t TraceReader::lines_read() const { return state_->lines.lines(); }
int64_t TraceReader::bytes_read() const { return state_->lines.bytes(); }

}  // namespace dsdiag::trace
