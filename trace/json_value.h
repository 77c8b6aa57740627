// JsonValue: a small ordered JSON tree for the few places that need one — the run
// configuration in a trace header and the evidence of a finding. Records on the hot path
// never build one (they use JsonLine).
//
// A value is 32 bytes: its kind, its number, and a shared payload for a string, array or
// object. Copies share the payload and a write copies it first (copy on write), so the
// 131,072 ranks of one run can hold one copy of a configuration they all agree on.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dsdiag::trace {

class JsonValue {
 public:
  enum class Kind { kNull, kBool, kInt, kDouble, kString, kArray, kObject };
  using Member = std::pair<std::string, JsonValue>;

  JsonValue() = default;  // null
  JsonValue(bool v) : kind_(Kind::kBool), int_(v) {}
  JsonValue(int v) : kind_(Kind::kInt), int_(v) {}
  JsonValue(int64_t v) : kind_(Kind::kInt), int_(v) {}
  JsonValue(uint64_t v) : kind_(Kind::kInt), int_(static_cast<int64_t>(v)) {}
  JsonValue(double v) : kind_(Kind::kDouble), double_(v) {}
  JsonValue(std::string v);
  JsonValue(std::string_view v) : JsonValue(std::string(v)) {}
  JsonValue(const char* v) : JsonValue(std::string(v)) {}

  static JsonValue Array() { return JsonValue(Kind::kArray); }
  static JsonValue Object() { return JsonValue(Kind::kObject); }

  Kind kind() const { return kind_; }
  bool is_null() const { return kind_ == Kind::kNull; }
  bool is_object() const { return kind_ == Kind::kObject; }
  bool is_array() const { return kind_ == Kind::kArray; }
  bool as_bool() const { return int_ != 0; }
  int64_t as_int() const { return kind_ == Kind::kDouble ? static_cast<int64_t>(double_) : int_; }
  double as_double() const { return kind_ == Kind::kInt ? static_cast<double>(int_) : double_; }
  const std::string& as_string() const;

  // Object members in insertion order; Set replaces an existing key.
  JsonValue& Set(std::string_view key, JsonValue v);
  const JsonValue* Find(std::string_view key) const;
  const std::vector<Member>& members() const;

  // Array elements.
  JsonValue& Push(JsonValue v);
  const std::vector<JsonValue>& elements() const;

  // Compact JSON (no spaces), the same bytes for equal values.
  void AppendJson(std::string* out) const;
  std::string ToJson() const;
  // A short human rendering for text output: strings unquoted at top level.
  std::string ToDisplay() const;

  friend bool operator==(const JsonValue& a, const JsonValue& b);
  friend bool operator!=(const JsonValue& a, const JsonValue& b) { return !(a == b); }

 private:
  struct Payload;
  explicit JsonValue(Kind k) : kind_(k) {}
  const Payload& Read() const;
  Payload& Write();  // this value's own payload, copied first when shared

  Kind kind_ = Kind::kNull;
  union {
    int64_t int_ = 0;  // kBool, kInt
    double double_;    // kDouble
  };
  std::shared_ptr<Payload> payload_;  // kString, kArray, kObject; null when empty
};

struct JsonValue::Payload {
  std::string string;
  std::vector<JsonValue> elements;
  std::vector<Member> members;
};

}  // namespace dsdiag::trace
