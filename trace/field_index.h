// FieldIndex: a record's members, listed by one pass over them as the reader reads it: each
// key's head (FieldKey) and where its value sits on the tape (record_tape.h), plus a small
// table from a head's slot (FieldKey::slot) to the member, so that most lookups compare one
// word. A slot two members share (a clash, or a repeated key) sends its lookups down the
// list, which keeps the first member of a name. Only the first kMaxFields members are listed;
// a key not among them in a longer record is searched on the tape. Internal to the reader:
// TraceReader builds one per record, Record's accessors look fields up in it, RecordBatch
// copies it along with the record.
#pragma once

#include <cstdint>

#include "trace/field_key.h"
#include "trace/record_tape.h"

namespace simdjson::dom {
class document;
}  // namespace simdjson::dom

namespace dsdiag::trace {

class FieldIndex {
 public:
  static constexpr int kMaxFields = 24;

  // Lists the members of `doc`'s root object (a record).
  void Build(const simdjson::dom::document& doc);
  // The listing, copied along with a copy of the record's tape (record_batch.h): Pack writes
  // PackedWords() words, Unpack lists them again for the copied tape and strings, without
  // walking the tape (on the thread that reads the copy, the tape is not in cache yet).
  size_t PackedWords() const { return PackedWords(static_cast<uint64_t>(count_)); }
  // The same from a packed listing's first word.
  static size_t PackedWords(uint64_t first) {
    const size_t count = first & 0xFFFFFFFF;
    return 1 + count + (count + 1) / 2;
  }
  void Pack(uint64_t* out) const;
  void Unpack(const uint64_t* in, const uint64_t* words, const uint8_t* strings);
  // The words of the record's tape, both root words included.
  uint32_t TapeWords() const { return static_cast<uint32_t>(words_[0] & tape::kValueMask) + 1; }
  // The bytes of the string buffer the record's strings take (simdjson writes them in
  // document order, so the last string on the tape ends them).
  size_t StringBytes() const;
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
  // The slow way, out of line (field_index.cc) so that Locate inlines.
  __attribute__((noinline)) uint32_t Search(const FieldKey& key) const;

  const uint64_t* words_ = nullptr;
  const uint8_t* strings_ = nullptr;
  // Lists member `count` (its head and value's index) in its slot.
  void List(int count, uint64_t head, uint32_t value) {
    heads_[count] = head;
    values_[count] = value;
    uint8_t& slot = slots_[FieldKey::SlotOf(head)];
    slot = slot == kEmpty ? static_cast<uint8_t>(count) : kShared;
  }

  int count_ = 0;
  bool complete_ = true;
  uint8_t slots_[FieldKey::kSlots];  // member index, kEmpty or kShared
  uint64_t heads_[kMaxFields];
  uint32_t values_[kMaxFields];
};

}  // namespace dsdiag::trace
