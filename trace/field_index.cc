#include "trace/field_index.h"

#include <simdjson.h>

#include <cstring>

namespace dsdiag::trace {

void FieldIndex::Build(const simdjson::dom::document& doc) {
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

uint32_t FieldIndex::Search(const FieldKey& key) const {
  for (int i = 0; i < count_; ++i)
    if (Matches(i, key)) return values_[i];
  return complete_ ? 0 : tape::Find(words_, strings_, key);
}

}  // namespace dsdiag::trace
