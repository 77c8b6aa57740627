// TraceReader: streams one rank's trace record by record, never loading the file whole.
//
// The file is read in chunks and split into lines, parsed with simdjson a block of lines
// at a time (one call per line costs more than the parse of a short line); from a line the
// block parse cannot vouch for on, the rest of its block is parsed line by line, so that an
// issue reads the same wherever its line sits.
// A line that is not a JSON object, or lacks the fields every record carries
// ("type" string, "ts" and "step" integers), becomes a ReadIssue naming file, line,
// column and what was expected, and reading goes on with the next line. A last line
// without its '\n' (the process died mid-write) is reported as a truncated tail.
//
//   auto reader = TraceReader::Open(path, &error);
//   Record r;
//   while (reader->Next(&r)) { if (r.type() == rec::kStep) ... r.Int("loss") ... }
//   for (const ReadIssue& i : reader->issues()) ...
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trace/json_value.h"
#include "trace/record_types.h"
#include "trace/trace_header.h"

namespace simdjson::dom {
class document;
class element;
class object;
}  // namespace simdjson::dom

namespace dsdiag::trace {

class FieldIndex;  // a record's top-level fields, listed by the reader (trace_reader.cc)

struct ReadIssue {
  std::string file;
  int64_t line = 0;              // 1-based
  int64_t column = 0;            // 1-based byte column of the first offending byte
  std::string expected;          // e.g. "a JSON object", "integer field \"ts\""
  std::string found;             // a short excerpt of what was there
  bool truncated_tail = false;   // the last line has no '\n': the writer died mid-line
  std::string ToString() const;  // "FILE:LINE:COL: expected X, found Y"
};

// A view of one parsed record, valid until the next TraceReader::Next().
class Record {
 public:
  std::string_view type() const { return type_; }
  // RecordTypeId(type()) (record_types.h), computed once by the reader.
  int type_id() const { return type_id_; }
  int64_t ts() const { return ts_; }
  int64_t step() const { return step_; }
  int tid() const { return tid_; }
  int64_t line() const { return line_; }

  // Field access; nullopt when absent or of another type.
  std::optional<int64_t> Int(std::string_view key) const;
  std::optional<double> Double(std::string_view key) const;  // ints convert
  std::optional<bool> Bool(std::string_view key) const;
  std::optional<std::string_view> Str(std::string_view key) const;
  std::optional<uint64_t> Hex(std::string_view key) const;  // a 16-hex-digit string
  bool Has(std::string_view key) const;
  // The whole field as a JsonValue tree (slower; for nested and rare fields).
  std::optional<JsonValue> Value(std::string_view key) const;
  // The raw simdjson object, for analyzers that walk arrays without copies.
  const simdjson::dom::object& object() const;
  std::string_view raw_line() const { return raw_; }

 private:
  friend class TraceReader;
  std::string_view type_;
  int type_id_ = kOtherRecordType;
  int64_t ts_ = 0;
  int64_t step_ = 0;
  int tid_ = 0;
  int64_t line_ = 0;
  // The value of the first field named `key`, from fields_ when it lists it.
  bool Find(std::string_view key, simdjson::dom::element* value) const;

  std::string_view raw_;
  const simdjson::dom::object* object_ = nullptr;
  // The fields, listed while the reader checked the common ones: a lookup compares a few
  // words per field instead of walking the parsed tape and comparing strings.
  const FieldIndex* fields_ = nullptr;
};

// A record that owns its parsed document and line, so it stays valid after its reader has
// moved on: the step driver's reader threads queue these. Reusable: TraceReader::NextOwned
// parses into the buffers of the previous record it held.
class OwnedRecord {
 public:
  OwnedRecord();
  ~OwnedRecord();
  OwnedRecord(OwnedRecord&&) noexcept;
  OwnedRecord& operator=(OwnedRecord&&) noexcept;

  // Valid while this OwnedRecord is neither refilled nor destroyed (a move keeps it valid).
  const Record& record() const { return record_; }

 private:
  friend class TraceReader;
  struct Storage;
  Record record_;
  std::unique_ptr<Storage> storage_;
};

class TraceReader {
 public:
  // Opens `path`; returns null and sets *error when it cannot be opened.
  static std::unique_ptr<TraceReader> Open(const std::string& path, std::string* error);
  ~TraceReader();

  // Advances to the next valid record. Returns false at end of file.
  bool Next(Record* out);
  // The same into a record that outlives the next call (slower: the line is copied).
  bool NextOwned(OwnedRecord* out);

  // The header parsed from line 1, when line 1 was a valid header record.
  const std::optional<TraceHeader>& header() const;
  // Reads line 1 (if not yet read) and returns the header, or nullopt with an issue.
  const std::optional<TraceHeader>& ReadHeader();

  const std::string& path() const;
  // Problems met so far. Capped at kMaxIssuesKept examples; issue_count() counts all.
  const std::vector<ReadIssue>& issues() const;
  int64_t issue_count() const;
  bool saw_truncated_tail() const;
  int64_t lines_read() const;
  int64_t bytes_read() const;
  static constexpr int kMaxIssuesKept = 20;

 private:
  struct State;
  explicit TraceReader(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// Converts a simdjson element to a JsonValue (used by Record::Value and header parsing).
JsonValue ToJsonValue(const simdjson::dom::element& element);

}  // namespace dsdiag::trace
