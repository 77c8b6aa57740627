#include "trace/field_index.h"

#include <simdjson.h>

#include <cstring>

#include "trace/record_types.h"

namespace dsdiag::trace {

void FieldIndex::Bind(const simdjson::dom::document& doc) {
  Bind(doc.tape.get(), doc.string_buf.get());
}

FieldIndex::Common FieldIndex::LocateCommon() {
  static constexpr FieldKey kType(kFieldType), kTs(kFieldTs), kStep(kFieldStep), kTid(kFieldTid);
  // Short names: the head is the whole name, so a match of heads is a match of names.
  static_assert(kFieldType.size() == 4 && kFieldTs.size() == 2 && kFieldStep.size() == 4 &&
                kFieldTid.size() == 3);
  Common found;
  const uint32_t close = static_cast<uint32_t>(words_[1]) - 1;  // the object's '}'
  uint32_t key = 0;
  for (uint32_t i = 2; i < close; i = tape::After(words_, i + 1)) {
    key = i;
    // The key's length and the 8 bytes from its start, unmasked (tape::HeadOf masks off what
    // follows a short key): each case below masks for its own length, a constant.
    uint64_t word;
    std::memcpy(&word, strings_ + (words_[i] & tape::kValueMask), sizeof word);
    // By length first: most members are none of the four, and one branch on the length
    // (which the records of a type repeat) turns them away.
    uint32_t* value = nullptr;
    switch (static_cast<uint32_t>(word)) {
      case 2:
        if ((word & tape::ShortHeadMask(2)) == kTs.head()) value = &found.ts;
        break;
      case 3:
        if ((word & tape::ShortHeadMask(3)) == kTid.head()) value = &found.tid;
        break;
      case 4:
        if (word == kType.head()) {
          value = &found.type;
        } else if (word == kStep.head()) {
          value = &found.step;
        }
        break;
      default:
        break;
    }
    if (value && *value == 0) *value = i + 1;
  }
  last_key_ = key;
  return found;
}

void FieldIndex::List() const {
  std::memset(slots_, kEmpty, sizeof slots_);
  const uint32_t close = static_cast<uint32_t>(words_[1]) - 1;  // the object's '}'
  int count = 0;  // a local: the byte stores to slots_ would make a member be reloaded
  uint32_t i = 2;
  for (; i < close && count < kMaxFields; i = tape::After(words_, i + 1), ++count) {
    ListMember(count, tape::HeadOf(strings_, words_[i]), i + 1);
  }
  count_ = count;
  complete_ = i >= close;
  listed_ = true;
}

size_t FieldIndex::StringBytes() const {
  // The last string is the last member's key or inside its value: walk from that key (past
  // the listed members when there were more) to the object's end, word by word. Numbers
  // take two words, the second raw; brackets are one word here, since nested values are
  // walked, not skipped.
  const uint32_t close = static_cast<uint32_t>(words_[1]) - 1;
  // From the last key a walk has found, or the last listed one, or the first.
  const uint32_t from = last_key_ ? last_key_ : listed_ && count_ ? values_[count_ - 1] - 1 : 2;
  uint32_t last_string = 0;  // 0: none (the root word is no string)
  for (uint32_t i = from; i < close;) {
    const char type = tape::Type(words_[i]);
    if (type == '"') last_string = i;
    i += (type == 'l' || type == 'u' || type == 'd') ? 2 : 1;
  }
  if (last_string == 0) return 0;
  const std::string_view s = tape::String(strings_, words_[last_string]);
  return static_cast<size_t>(reinterpret_cast<const uint8_t*>(s.data()) - strings_) + s.size() + 1;
}

uint32_t FieldIndex::Search(const FieldKey& key) const {
  for (int i = 0; i < count_; ++i)
    if (Matches(i, key)) return values_[i];
  return complete_ ? 0 : tape::Find(words_, strings_, key);
}

}  // namespace dsdiag::trace
