// TraceReader: streams one rank's trace record by record, never loading the file whole.
//
// The file is read in chunks and split into lines, parsed with simdjson a block of lines
// at a time (one call per line costs more than the parse of a short line); from a line the
// block parse cannot vouch for on, the rest of its block is parsed line by line, so that an
// issue reads the same wherever its line sits.
// A line that is not a JSON object, or lacks the fields every record carries
// ("type" string, "ts" and "step" integers), becomes a LocatedIssue naming file, line,
// column and what was expected, and reading goes on with the next line. A last line
// without its '\n' (the process died mid-write) is reported as a truncated tail.
//
//   auto reader = TraceReader::Open(path, &error);
//   Record r;
//   while (reader->Next(&r)) { if (r.type() == rec::kStep) ... r.Int("loss") ... }
//   for (const LocatedIssue& i : reader->issues()) ...
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trace/json_value.h"
#include "trace/located_issue.h"
#include "trace/record_types.h"
#include "trace/trace_header.h"

namespace simdjson::dom {
class document;
class element;
class object;
}  // namespace simdjson::dom

namespace dsdiag::trace {

class FieldIndex;  // a record's members, listed by the reader (trace_reader.cc)

// A field name to look up in a record, with its head: its length and first 4 bytes as one
// word, which the reader compares with each member's (trace_reader.cc). Made where the
// name is known, so that a literal's head is the compiler's work, not the lookup's.
class FieldKey {
 public:
  constexpr FieldKey(std::string_view name) : name_(name), head_(Head(name)) {}
  constexpr FieldKey(const char* name) : FieldKey(std::string_view(name)) {}
  FieldKey(const std::string& name) : FieldKey(std::string_view(name)) {}

  constexpr std::string_view name() const { return name_; }
  constexpr uint64_t head() const { return head_; }
  // Where the reader's index of a record's members puts a key with this head.
  static constexpr int kSlots = 64;
  static constexpr uint32_t SlotOf(uint64_t head) {
    return static_cast<uint32_t>((head * 0x9E3779B97F4A7C15ull) >> 58);  // the top 6 bits
  }
  constexpr uint32_t slot() const { return SlotOf(head_); }

 private:
  static constexpr uint64_t Head(std::string_view name) {
    uint64_t head = name.size() & 0xFFFFFFFF;
    for (size_t i = 0; i < name.size() && i < 4; ++i)
      head |= uint64_t{static_cast<unsigned char>(name[i])} << (32 + 8 * i);
    return head;
  }

  std::string_view name_;
  uint64_t head_;
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
  std::optional<int64_t> Int(FieldKey key) const;
  std::optional<double> Double(FieldKey key) const;  // ints convert
  std::optional<bool> Bool(FieldKey key) const;
  std::optional<std::string_view> Str(FieldKey key) const;
  std::optional<uint64_t> Hex(FieldKey key) const;  // a 16-hex-digit string
  // An array of such strings into *out (cleared first); false when absent, not an array,
  // or holding anything else (then *out holds the elements before the odd one).
  bool HexArray(FieldKey key, std::vector<uint64_t>* out) const;
  // The same for an array of integers, and for an array of strings (copied).
  bool IntArray(FieldKey key, std::vector<int64_t>* out) const;
  bool StrArray(FieldKey key, std::vector<std::string>* out) const;
  // The members of object field `key`, in order (the first of duplicate names only), with
  // their values where they are numbers, into *out (cleared first; reuse it to allocate
  // nothing once it has grown). False when the field is absent or not an object.
  struct NumberMember {
    std::string_view name;
    bool is_number = false;  // `value` holds it
    bool is_int64 = false;   // an integer within int64: `int64` holds it exactly
    int64_t int64 = 0;
    double value = 0;  // every number, as a double
  };
  bool NumberMembers(FieldKey key, std::vector<NumberMember>* out) const;
  bool Has(FieldKey key) const;
  // The whole field as a JsonValue tree (slower; for nested and rare fields).
  std::optional<JsonValue> Value(FieldKey key) const;
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
  // Where the value of the first field named `key` sits on the parsed document's tape;
  // 0 when there is none (trace_reader.cc reads the tape).
  uint32_t Locate(const FieldKey& key) const;
  // The value of the first field named `key` as an element (the object's own lookup,
  // skipped when the tape says the key is absent).
  bool Find(const FieldKey& key, simdjson::dom::element* value) const;

  std::string_view raw_;
  const simdjson::dom::object* object_ = nullptr;
  // The record's members, listed while the reader checked the common ones: a lookup goes
  // to the key's slot (FieldKey::slot) and compares one word for most keys, and
  // Int/Str/... read the value straight off the parsed tape (no element built).
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
  const std::vector<LocatedIssue>& issues() const;
  int64_t issue_count() const;
  bool saw_truncated_tail() const;
  int64_t lines_read() const;
  int64_t bytes_read() const;
  static constexpr int kMaxIssuesKept = 20;

  // Lines read by every reader of this process that has been destroyed: how often a command
  // read its input (tests check that `timeline` reads each trace once).
  static int64_t LinesReadByClosedReaders();

 private:
  struct State;
  explicit TraceReader(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// Converts a simdjson element to a JsonValue (used by Record::Value and header parsing).
JsonValue ToJsonValue(const simdjson::dom::element& element);

}  // namespace dsdiag::trace
