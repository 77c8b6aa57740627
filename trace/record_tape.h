// Reading a parsed record straight off simdjson's tape (its DOM layout, doc/tape.md in
// simdjson): one 64-bit word per scalar, key or bracket, the type in the top byte. Numbers
// take a second word; '{' and '[' hold the index past their matching bracket; strings hold an
// offset into the string buffer, where a 32-bit length precedes the unescaped bytes and a
// '\0' follows them. The record is the root object, at index 1, each member a key word
// followed by its value. Reading the tape directly finds a field for a fraction of what the
// element iterators cost, and answers Int/Str lookups without building elements: records are
// read by the million. Internal to the reader (FieldIndex, Record, TraceReader); every helper
// is inline, since each lookup runs them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "trace/field_key.h"

namespace dsdiag::trace::tape {

constexpr uint64_t kValueMask = 0x00FFFFFFFFFFFFFF;  // the payload below the type byte

inline char Type(uint64_t word) { return static_cast<char>(word >> 56); }

inline std::string_view String(const uint8_t* strings, uint64_t word) {
  const uint8_t* at = strings + (word & kValueMask);
  uint32_t length;
  std::memcpy(&length, at, sizeof length);
  return std::string_view(reinterpret_cast<const char*>(at + sizeof length), length);
}

// Words a value of each type takes; 0 for '{' and '[', which say where they end.
struct Widths {
  uint8_t of[256];
  constexpr Widths() : of() {
    for (int t = 0; t < 256; ++t) of[t] = 1;
    for (unsigned char t : {'l', 'u', 'd'}) of[t] = 2;
    for (unsigned char t : {'{', '['}) of[t] = 0;
  }
};
inline constexpr Widths kWidths;

// The index of the word after the value at `i`. Branches, not a table lookup: a walk over
// a record's members is a chain of these, and a branch the CPU predicts (records of a type
// repeat their layout) lets it run ahead, where a computed index makes every step wait for
// its load. Measured on the bare drive at 16,384 ranks (perf): FieldIndex::Build took 40%
// fewer samples than with the table.
inline uint32_t After(const uint64_t* words, uint32_t i) {
  const uint64_t word = words[i];
  const char type = Type(word);
  if (type == 'l' || type == 'u' || type == 'd') return i + 2;
  if (type == '{' || type == '[') [[unlikely]] {
    uint64_t end = word;
    asm("" : "+r"(end));  // keeps this a branch: compilers turn the choice into a cmov
    return static_cast<uint32_t>(end);
  }
  return i + 1;
}

// The head of the key `word` points at, as FieldKey::head() gives it: its length, then its
// first bytes, up to 4. The buffer has room past every string (SIMDJSON_PADDING), so one
// load reads them.
// The bits of the loaded word a head keeps for a key of `length` < 4: its length and bytes.
constexpr uint64_t ShortHeadMask(uint32_t length) { return (uint64_t{1} << (32 + 8 * length)) - 1; }
inline uint64_t HeadOf(const uint8_t* strings, uint64_t word) {
  uint64_t head;
  std::memcpy(&head, strings + (word & kValueMask), sizeof head);
  const uint32_t length = static_cast<uint32_t>(head);
  return length >= 4 ? head : head & ShortHeadMask(length);
}

// Whether the key `word` points at, whose head matched `key`'s, is `key`: the bytes past
// the first 4 (keys are short: no library call).
inline bool TailIs(const FieldKey& key, const uint8_t* strings, uint64_t word) {
  const std::string_view name = key.name();
  const uint8_t* at = strings + (word & kValueMask) + sizeof(uint32_t);
  for (size_t i = 4; i < name.size(); ++i)
    if (at[i] != static_cast<unsigned char>(name[i])) return false;
  return true;
}

inline bool Is(const FieldKey& key, const uint8_t* strings, uint64_t word) {
  return HeadOf(strings, word) == key.head() && TailIs(key, strings, word);
}

// The tape index of the first member named `key`'s value in the root object; 0 when none.
inline uint32_t Find(const uint64_t* words, const uint8_t* strings, const FieldKey& key) {
  const uint32_t close = static_cast<uint32_t>(words[1]) - 1;  // the object's '}'
  for (uint32_t i = 2; i < close; i = After(words, i + 1))
    if (Is(key, strings, words[i])) return i + 1;
  return 0;
}

// As dom::element::get_int64 / get_double / get_bool / get_string read the value at `i`.
inline bool Int(const uint64_t* words, uint32_t i, int64_t* out) {
  const char type = Type(words[i]);
  if (type == 'l') {
    std::memcpy(out, &words[i + 1], sizeof *out);
    return true;
  }
  if (type != 'u' || words[i + 1] > static_cast<uint64_t>(INT64_MAX)) return false;
  *out = static_cast<int64_t>(words[i + 1]);
  return true;
}

inline bool Double(const uint64_t* words, uint32_t i, double* out) {
  switch (Type(words[i])) {
    case 'd':
      std::memcpy(out, &words[i + 1], sizeof *out);
      return true;
    case 'u':
      *out = static_cast<double>(words[i + 1]);
      return true;
    case 'l':
      *out = static_cast<double>(static_cast<int64_t>(words[i + 1]));
      return true;
    default:
      return false;
  }
}

inline bool Bool(const uint64_t* words, uint32_t i, bool* out) {
  const char type = Type(words[i]);
  if (type != 't' && type != 'f') return false;
  *out = type == 't';
  return true;
}

inline bool String(const uint64_t* words, const uint8_t* strings, uint32_t i,
                   std::string_view* out) {
  if (Type(words[i]) != '"') return false;
  *out = String(strings, words[i]);
  return true;
}

}  // namespace dsdiag::trace::tape
