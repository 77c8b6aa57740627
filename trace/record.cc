#include "trace/record.h"

#include <simdjson.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "trace/field_index.h"
#include "trace/json_from_tape.h"
#include "trace/owned_record_storage.h"
#include "trace/record_tape.h"

namespace dsdiag::trace {

// ---- Record ----

uint32_t Record::Locate(const FieldKey& key) const { return fields_ ? fields_->Locate(key) : 0; }

std::optional<int64_t> Record::Int(const FieldKey& key) const {
  int64_t v;
  const uint32_t at = Locate(key);
  if (at == 0 || !tape::Int(fields_->words(), at, &v)) return std::nullopt;
  return v;
}

std::optional<double> Record::Double(const FieldKey& key) const {
  double v;
  const uint32_t at = Locate(key);
  if (at == 0 || !tape::Double(fields_->words(), at, &v)) return std::nullopt;
  return v;
}

std::optional<bool> Record::Bool(const FieldKey& key) const {
  bool v;
  const uint32_t at = Locate(key);
  if (at == 0 || !tape::Bool(fields_->words(), at, &v)) return std::nullopt;
  return v;
}

std::optional<std::string_view> Record::Str(const FieldKey& key) const {
  std::string_view v;
  const uint32_t at = Locate(key);
  if (at == 0 || !tape::String(fields_->words(), fields_->strings(), at, &v)) return std::nullopt;
  return v;
}

namespace {

// Each byte's value as a hex digit; 0xFF for the bytes that are none.
struct HexDigits {
  uint8_t of[256];
  constexpr HexDigits() : of() {
    for (int c = 0; c < 256; ++c) of[c] = 0xFF;
    for (int d = 0; d < 10; ++d) of['0' + d] = static_cast<uint8_t>(d);
    for (int d = 0; d < 6; ++d) {
      of['a' + d] = static_cast<uint8_t>(10 + d);
      of['A' + d] = static_cast<uint8_t>(10 + d);
    }
  }
};
constexpr HexDigits kHexDigits;

// 16 hex digits, as from_chars in base 16 takes them whole; false for anything else.
bool ParseHex16(std::string_view s, uint64_t* out) {
  if (s.size() != 16) return false;
  uint64_t v = 0;
  uint8_t bad = 0;  // 0xFF's bits survive the OR when any byte is no digit
  for (char c : s) {
    const uint8_t digit = kHexDigits.of[static_cast<unsigned char>(c)];
    bad |= digit;
    v = v << 4 | (digit & 0xF);
  }
  if (bad & 0xF0) return false;
  *out = v;
  return true;
}

}  // namespace

std::optional<uint64_t> Record::Hex(const FieldKey& key) const {
  const std::optional<std::string_view> s = Str(key);
  uint64_t v;
  if (!s || !ParseHex16(*s, &v)) return std::nullopt;
  return v;
}

uint32_t Record::LocateArray(const FieldKey& key, uint32_t* close) const {
  const uint32_t at = Locate(key);
  if (at == 0 || tape::Type(fields_->words()[at]) != '[') return 0;
  // The elements lie between the '[' and the ']' before the index the '[' holds.
  *close = static_cast<uint32_t>(fields_->words()[at]) - 1;
  return at;
}

bool Record::HexArray(const FieldKey& key, std::vector<uint64_t>* out) const {
  out->clear();
  uint32_t close;
  const uint32_t at = LocateArray(key, &close);
  if (at == 0) return false;
  out->reserve(close - at - 1);  // at most: one word per string
  for (uint32_t i = at + 1; i < close; ++i) {
    std::string_view text;
    uint64_t v;
    if (!tape::String(fields_->words(), fields_->strings(), i, &text) || !ParseHex16(text, &v))
      return false;
    out->push_back(v);
  }
  return true;
}

bool Record::IntArray(const FieldKey& key, std::vector<int64_t>* out) const {
  out->clear();
  uint32_t close;
  const uint32_t at = LocateArray(key, &close);
  if (at == 0) return false;
  for (uint32_t i = at + 1; i < close; i = tape::After(fields_->words(), i)) {
    int64_t v;
    if (!tape::Int(fields_->words(), i, &v)) return false;
    out->push_back(v);
  }
  return true;
}

bool Record::StrArray(const FieldKey& key, std::vector<std::string>* out) const {
  out->clear();
  uint32_t close;
  const uint32_t at = LocateArray(key, &close);
  if (at == 0) return false;
  for (uint32_t i = at + 1; i < close; i = tape::After(fields_->words(), i)) {
    std::string_view v;
    if (!tape::String(fields_->words(), fields_->strings(), i, &v)) return false;
    out->emplace_back(v);
  }
  return true;
}

namespace {

// Adds the member `name` (unless listed already: the first of duplicate keys counts).
void AddNumberMember(std::string_view name, bool is_number, bool is_int64, int64_t int64,
                     double value, std::vector<Record::NumberMember>* out) {
  for (const Record::NumberMember& m : *out)
    if (m.name == name) return;
  Record::NumberMember m;
  m.name = name;
  m.is_number = is_number;
  m.is_int64 = is_int64;
  m.int64 = int64;
  m.value = value;
  out->push_back(m);
}

}  // namespace

bool Record::NumberMembers(const FieldKey& key, std::vector<NumberMember>* out) const {
  out->clear();
  const uint32_t at = Locate(key);
  if (at == 0) return false;
  const uint64_t* words = fields_->words();
  if (tape::Type(words[at]) != '{') return false;
  // The members lie between the '{' and the '}' before the index the '{' holds, each a key
  // word and its value (step records, by the million).
  const uint32_t close = static_cast<uint32_t>(words[at]) - 1;
  for (uint32_t i = at + 1; i < close; i = tape::After(words, i + 1)) {
    const std::string_view name = tape::String(fields_->strings(), words[i]);
    double value = 0;
    const bool is_number = tape::Double(words, i + 1, &value);
    const bool is_int64 = tape::Type(words[i + 1]) == 'l';
    int64_t int64 = 0;
    if (is_int64) std::memcpy(&int64, &words[i + 2], sizeof int64);
    AddNumberMember(name, is_number, is_int64, int64, value, out);
  }
  return true;
}

bool Record::Has(const FieldKey& key) const { return Locate(key) != 0; }

std::optional<JsonValue> Record::Value(const FieldKey& key) const {
  const uint32_t at = Locate(key);
  if (at == 0) return std::nullopt;
  return tape::ToJsonValue(fields_->words(), fields_->strings(), at);
}

const simdjson::dom::object& Record::object() const { return *object_; }

// ---- OwnedRecord ----

OwnedRecord::OwnedRecord() = default;
OwnedRecord::~OwnedRecord() = default;
OwnedRecord::OwnedRecord(OwnedRecord&&) noexcept = default;
OwnedRecord& OwnedRecord::operator=(OwnedRecord&&) noexcept = default;

}  // namespace dsdiag::trace
