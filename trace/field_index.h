// FieldIndex: a record's members, listed by one pass over them the first time a field is
// looked up: each key's head (FieldKey) and where its value sits on the tape (record_tape.h),
// plus a small table from a head's slot (FieldKey::slot) to the member, so that most lookups
// compare one word. A slot two members share (a clash, or a repeated key) sends its lookups
// down the list, which keeps the first member of a name. Only the first kMaxFields members
// are listed; a key not among them in a longer record is searched on the tape. Internal to
// the reader: TraceReader binds one to each record it parses, Record's accessors look fields
// up in it, RecordBatch binds one to each copy it hands back.
//
// Listing waits for the first lookup because the reader's own checks need four fields only
// (LocateCommon finds them on one walk that lists nothing), and when the step driver reads
// ahead (parse_ahead.h) the lookups come on the analyzers' thread: the reading thread, the
// longer of the two, then does not list members it never looks at.
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

  // Points the index at a record: a parsed document's root object, or the tape and strings
  // of a copy of one (record_batch.h). Lists nothing yet.
  void Bind(const simdjson::dom::document& doc);
  void Bind(const uint64_t* words, const uint8_t* strings) {
    words_ = words;
    strings_ = strings;
    listed_ = false;
    last_key_ = 0;
  }

  // The values of the fields every record carries (0: absent), the first member of each
  // name, found by one walk over the members that lists none of them.
  struct Common {
    uint32_t type = 0, ts = 0, step = 0, tid = 0;
  };
  Common LocateCommon();

  // The words of the record's tape, both root words included.
  uint32_t TapeWords() const { return static_cast<uint32_t>(words_[0] & tape::kValueMask) + 1; }
  // The bytes of the string buffer the record's strings take (simdjson writes them in
  // document order, so the last string on the tape ends them).
  size_t StringBytes() const;
  const uint64_t* words() const { return words_; }
  const uint8_t* strings() const { return strings_; }

  // The tape index of the first member named `key`'s value; 0 when none.
  uint32_t Locate(const FieldKey& key) const {
    if (!listed_) [[unlikely]]
      List();
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
  // The slow ways, out of line (field_index.cc) so that Locate inlines.
  __attribute__((noinline)) uint32_t Search(const FieldKey& key) const;
  __attribute__((noinline)) void List() const;
  // Lists member `count` (its head and value's index) in its slot.
  void ListMember(int count, uint64_t head, uint32_t value) const {
    heads_[count] = head;
    values_[count] = value;
    uint8_t& slot = slots_[FieldKey::SlotOf(head)];
    slot = slot == kEmpty ? static_cast<uint8_t>(count) : kShared;
  }

  const uint64_t* words_ = nullptr;
  const uint8_t* strings_ = nullptr;
  // The last member's key, once a walk has found it (0: not yet).
  uint32_t last_key_ = 0;
  // The listing: made by the first lookup, which a const Record makes (a record and its
  // index are read by one thread at a time).
  mutable bool listed_ = false;
  mutable int count_ = 0;
  mutable bool complete_ = true;
  mutable uint8_t slots_[FieldKey::kSlots];  // member index, kEmpty or kShared
  mutable uint64_t heads_[kMaxFields];
  mutable uint32_t values_[kMaxFields];
};

}  // namespace dsdiag::trace
