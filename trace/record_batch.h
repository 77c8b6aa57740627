// RecordBatch: records copied out of their reader, to be read on another thread after the
// reader has moved on (the step driver's parse-ahead, analyzers/framework/parse_ahead.h).
//
// A record is its tape and the string bytes its strings take (record_tape.h), copied as they
// are: every index on a record's tape counts from its own first word and every string offset
// from its own first byte, so the copy reads exactly as the parsed document did, with no
// relocation. The common fields come along; the index of members does not: a record read
// back lists its members at its first lookup, on the thread that reads the copy (the
// reading thread, the longer one, has not listed them: field_index.h). A record read back
// has no raw line and no simdjson object (Record::raw_line() is empty): its accessors read
// the tape, as they do for any record.
//
//   RecordBatch batch;  batch.Append(record);  ...
//   RecordBatch::Cursor at;  Record r;  FieldIndex fields;
//   while (batch.Next(&at, &r, &fields)) ...
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "trace/field_index.h"
#include "trace/record.h"

namespace dsdiag::trace {

class RecordBatch {
 public:
  // Copies `record` (one TraceReader handed out, or one read back from a batch).
  void Append(const Record& record);
  // Makes room for `bytes` of copies at once: a batch filled to a known size (a parse-ahead
  // chunk) is then allocated once, not regrown and copied a dozen times from 8 KiB.
  void Reserve(size_t bytes);
  // Forgets the records; keeps the memory.
  void Clear() {
    size_ = 0;
    count_ = 0;
  }
  size_t size() const { return count_; }
  size_t bytes() const { return size_ * sizeof(uint64_t); }

  // Where Next is in the batch.
  struct Cursor {
    size_t word = 0;
  };
  // The record at `*at` into *out, with *fields its index of members (both valid while the
  // batch is neither changed nor destroyed); advances *at. False past the last record.
  bool Next(Cursor* at, Record* out, FieldIndex* fields) const;

 private:
  // What precedes each record's tape and strings, in whole words.
  struct Head {
    int64_t ts;
    int64_t step;
    int64_t line;
    int32_t tid;
    int32_t type_id;
    uint32_t tape_words;
    uint32_t string_bytes;
    uint32_t type_offset;  // of the "type" string's bytes, in the record's strings
    uint32_t type_length;
  };
  static constexpr size_t kHeadWords = (sizeof(Head) + 7) / 8;
  // String bytes past the last string that a lookup may read (tape::HeadOf reads a word).
  static constexpr size_t kStringSlack = 8;

  // Makes room for `words` more words; returns where they go. Not a vector: its resize
  // would zero what the copy overwrites at once.
  uint64_t* Extend(size_t words);
  // Moves the copies to a new allocation of `capacity` words.
  void Grow(size_t capacity);

  std::unique_ptr<uint64_t[]> words_;  // heads, listings, tapes and strings, in whole words
  size_t size_ = 0;                    // words used
  size_t capacity_ = 0;
  size_t count_ = 0;
};

}  // namespace dsdiag::trace
