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
    List(count, tape::HeadOf(strings_, words_[i]), i + 1);
  }
  count_ = count;
  complete_ = i >= close;
}

void FieldIndex::Pack(uint64_t* out) const {
  out[0] = static_cast<uint64_t>(count_) | uint64_t{complete_} << 32;
  std::memcpy(out + 1, heads_, sizeof(uint64_t) * count_);
  uint64_t* values = out + 1 + count_;     // two to a word
  if (count_ % 2) values[count_ / 2] = 0;  // the last word's unused half
  std::memcpy(values, values_, sizeof(uint32_t) * count_);
}

void FieldIndex::Unpack(const uint64_t* in, const uint64_t* words, const uint8_t* strings) {
  words_ = words;
  strings_ = strings;
  std::memset(slots_, kEmpty, sizeof slots_);
  const int count = static_cast<int>(in[0] & 0xFFFFFFFF);
  uint32_t values[kMaxFields];
  std::memcpy(values, in + 1 + count, sizeof(uint32_t) * count);
  for (int i = 0; i < count; ++i) List(i, in[1 + i], values[i]);
  count_ = count;
  complete_ = (in[0] >> 32) != 0;
}

size_t FieldIndex::StringBytes() const {
  // The last string is the last member's key or inside its value: walk from that key (past
  // the listed members when there were more) to the object's end, word by word. Numbers
  // take two words, the second raw; brackets are one word here, since nested values are
  // walked, not skipped.
  const uint32_t close = static_cast<uint32_t>(words_[1]) - 1;
  uint32_t last_string = 0;  // 0: none (the root word is no string)
  for (uint32_t i = count_ ? values_[count_ - 1] - 1 : 2; i < close;) {
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
