// FieldKey: a field name to look up in a record (Record::Int, Str, ...), with its head: its
// length and first 4 bytes as one word, which the reader compares with each member's
// (field_index.h, record_tape.h). Made where the name is known, so that a literal's head is
// the compiler's work, not the lookup's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace dsdiag::trace {

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

}  // namespace dsdiag::trace
