#include "trace/record_batch.h"

#include <algorithm>
#include <cstring>

namespace dsdiag::trace {

void RecordBatch::Append(const Record& record) {
  const FieldIndex& fields = *record.fields_;
  Head head{};
  head.ts = record.ts_;
  head.step = record.step_;
  head.line = record.line_;
  head.tid = record.tid_;
  head.type_id = record.type_id_;
  head.tape_words = fields.TapeWords();
  head.string_bytes = static_cast<uint32_t>(fields.StringBytes());
  head.type_offset = static_cast<uint32_t>(reinterpret_cast<const uint8_t*>(record.type_.data()) -
                                           fields.strings());
  head.type_length = static_cast<uint32_t>(record.type_.size());
  const size_t string_words = (head.string_bytes + kStringSlack + 7) / 8;
  uint64_t* out = Extend(kHeadWords + head.tape_words + string_words);
  std::memcpy(out, &head, sizeof head);
  out += kHeadWords;
  std::memcpy(out, fields.words(), head.tape_words * sizeof(uint64_t));
  out += head.tape_words;
  // The slack past the strings (8 to 15 bytes) lies in the last two words: zero them, then
  // copy the strings over their start (two stores, not a call per record).
  static_assert(kStringSlack + 7 < 2 * sizeof(uint64_t));
  out[string_words - 1] = 0;
  if (string_words >= 2) out[string_words - 2] = 0;
  std::memcpy(out, fields.strings(), head.string_bytes);
  ++count_;
}

void RecordBatch::Reserve(size_t bytes) {
  const size_t words = (bytes + 7) / 8;
  if (words > capacity_) Grow(words);
}

void RecordBatch::Grow(size_t capacity) {
  std::unique_ptr<uint64_t[]> grown(new uint64_t[capacity]);  // uninitialised
  if (size_) std::memcpy(grown.get(), words_.get(), size_ * sizeof(uint64_t));
  words_ = std::move(grown);
  capacity_ = capacity;
}

uint64_t* RecordBatch::Extend(size_t words) {
  if (size_ + words > capacity_) {
    Grow(std::max(size_ + words, std::max<size_t>(capacity_ * 2, 1024)));
  }
  uint64_t* at = words_.get() + size_;
  size_ += words;
  return at;
}

bool RecordBatch::Next(Cursor* at, Record* out, FieldIndex* fields) const {
  if (at->word >= size_) return false;
  const uint64_t* in = words_.get() + at->word;
  Head head;
  std::memcpy(&head, in, sizeof head);
  const uint64_t* tape = in + kHeadWords;
  const uint8_t* strings = reinterpret_cast<const uint8_t*>(tape + head.tape_words);
  at->word = static_cast<size_t>(tape - words_.get()) + head.tape_words +
             (head.string_bytes + kStringSlack + 7) / 8;
  fields->Bind(tape, strings);
  out->type_ =
      std::string_view(reinterpret_cast<const char*>(strings) + head.type_offset, head.type_length);
  out->type_id_ = head.type_id;
  out->ts_ = head.ts;
  out->step_ = head.step;
  out->tid_ = head.tid;
  out->line_ = head.line;
  out->raw_ = {};
  out->object_ = nullptr;
  out->fields_ = fields;
  return true;
}

}  // namespace dsdiag::trace
