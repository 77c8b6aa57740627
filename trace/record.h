// Record: a view of one parsed trace record (what TraceReader::Next hands out) and its field
// accessors: the common fields (type, ts, step, tid), typed lookups of the others (Int,
// Double, Str, Hex, arrays, numeric members) and the whole field as a JsonValue. Lookups go
// through the reader's index of the record's members (field_index.h) and read values straight
// off the parsed tape (record_tape.h). OwnedRecord is a Record that keeps its own parsed
// document and line, for records that must outlive the reader's next call.
//
// Users include trace/trace_reader.h, which includes this.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trace/field_key.h"
#include "trace/json_value.h"
#include "trace/record_types.h"

namespace simdjson::dom {
class object;
}  // namespace simdjson::dom

namespace dsdiag::trace {

class FieldIndex;   // a record's members, listed at its first lookup (field_index.h)
class TraceReader;  // trace_reader.h: fills records

// A view of one parsed record, valid until the next TraceReader::Next().
class Record {
 public:
  std::string_view type() const { return type_; }
  // RecordTypeId(type()) (record_types.h), computed at the first call: on the thread that
  // dispatches the record, not on the step driver's reading thread (parse_ahead.h).
  int type_id() const {
    if (type_id_ == kTypeIdNotYet) type_id_ = RecordTypeId(type_);
    return type_id_;
  }
  int64_t ts() const { return ts_; }
  int64_t step() const { return step_; }
  int tid() const { return tid_; }
  int64_t line() const { return line_; }

  // Field access; nullopt when absent or of another type.
  std::optional<int64_t> Int(const FieldKey& key) const;
  std::optional<double> Double(const FieldKey& key) const;  // ints convert
  std::optional<bool> Bool(const FieldKey& key) const;
  std::optional<std::string_view> Str(const FieldKey& key) const;
  std::optional<uint64_t> Hex(const FieldKey& key) const;  // a 16-hex-digit string
  // An array of such strings into *out (cleared first); false when absent, not an array,
  // or holding anything else (then *out holds the elements before the odd one).
  bool HexArray(const FieldKey& key, std::vector<uint64_t>* out) const;
  // The same for an array of integers, and for an array of strings (copied).
  bool IntArray(const FieldKey& key, std::vector<int64_t>* out) const;
  bool StrArray(const FieldKey& key, std::vector<std::string>* out) const;
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
  bool NumberMembers(const FieldKey& key, std::vector<NumberMember>* out) const;
  bool Has(const FieldKey& key) const;
  // The whole field as a JsonValue tree (slower; for nested and rare fields).
  std::optional<JsonValue> Value(const FieldKey& key) const;
  // The raw simdjson object and the line, for code that reads a TraceReader directly (the
  // fuzzer, tests, the v2 expander). A record copied out of its reader (record_batch.h, what
  // the step driver's parse-ahead hands analyzers) has neither: raw_line() is empty and
  // object() must not be called. Analyzers use the accessors above, which read the tape.
  const simdjson::dom::object& object() const;
  std::string_view raw_line() const { return raw_; }

 private:
  friend class TraceReader;
  friend class RecordBatch;  // copies records and reads them back (record_batch.h)
  static constexpr int kTypeIdNotYet = -1;
  std::string_view type_;
  mutable int type_id_ = kOtherRecordType;
  int64_t ts_ = 0;
  int64_t step_ = 0;
  int tid_ = 0;
  int64_t line_ = 0;
  // Where the value of the first field named `key` sits on the parsed document's tape;
  // 0 when there is none (record.cc reads the tape).
  uint32_t Locate(const FieldKey& key) const;
  // The same for an array: its '[' (0: absent or not an array), one past its last element
  // in *close.
  uint32_t LocateArray(const FieldKey& key, uint32_t* close) const;

  std::string_view raw_;
  const simdjson::dom::object* object_ = nullptr;
  // The record's members, listed at the first lookup: a lookup goes to the key's slot
  // (FieldKey::slot) and compares one word for most keys, and Int/Str/... read the value straight
  // off the parsed tape (no element built).
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

}  // namespace dsdiag::trace
