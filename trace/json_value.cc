#include "trace/json_value.h"

#include <charconv>
#include <cmath>

#include "trace/json_line.h"

namespace dsdiag::trace {
namespace {

void AppendInt(std::string* out, int64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out->append(buf, r.ptr);
}

// Same spelling as JsonLine::Double, so a value reads the same wherever it was written.
void AppendDouble(std::string* out, double v) {
  if (!std::isfinite(v)) {
    out->append("null");
    return;
  }
  char buf[32];
  // As in JsonLine: past 2^63 a plain-integer spelling may not parse back.
  auto r = std::fabs(v) < 9223372036854775808.0
               ? std::to_chars(buf, buf + sizeof buf, v)
               : std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  out->append(buf, r.ptr);
}

bool IsNumber(JsonValue::Kind k) {
  return k == JsonValue::Kind::kInt || k == JsonValue::Kind::kDouble;
}

// Numbers compare by value across kinds: 2 and 2.0 are written the same ("2"), and a
// round trip through text turns one into the other. Non-finite doubles are written as
// null, so they equal null and each other.
bool NumbersEqual(const JsonValue& a, const JsonValue& b) {
  if (a.kind() == JsonValue::Kind::kInt && b.kind() == JsonValue::Kind::kInt) {
    return a.as_int() == b.as_int();
  }
  const double x = a.as_double();
  const double y = b.as_double();
  if (!std::isfinite(x) || !std::isfinite(y)) return !std::isfinite(x) && !std::isfinite(y);
  if (a.kind() == JsonValue::Kind::kInt || b.kind() == JsonValue::Kind::kInt) {
    // Compare an int to a double exactly: converting the int to double could round.
    const JsonValue& i = a.kind() == JsonValue::Kind::kInt ? a : b;
    const double d = a.kind() == JsonValue::Kind::kInt ? y : x;
    if (d != std::trunc(d) || d < -9.2233720368547758e18 || d >= 9.2233720368547758e18) {
      return false;
    }
    return static_cast<int64_t>(d) == i.as_int();
  }
  return x == y;
}

bool IsNullLike(const JsonValue& v) {
  return v.is_null() || (v.kind() == JsonValue::Kind::kDouble && !std::isfinite(v.as_double()));
}

}  // namespace

JsonValue::JsonValue(std::string v) : kind_(Kind::kString) {
  if (!v.empty()) Write().string = std::move(v);
}

const JsonValue::Payload& JsonValue::Read() const {
  static const Payload kEmpty;
  return payload_ ? *payload_ : kEmpty;
}

JsonValue::Payload& JsonValue::Write() {
  if (!payload_) {
    payload_ = std::make_shared<Payload>();
  } else if (payload_.use_count() > 1) {
    payload_ = std::make_shared<Payload>(*payload_);
  }
  return *payload_;
}

const std::string& JsonValue::as_string() const { return Read().string; }
const std::vector<JsonValue::Member>& JsonValue::members() const { return Read().members; }
const std::vector<JsonValue>& JsonValue::elements() const { return Read().elements; }

JsonValue& JsonValue::Set(std::string_view key, JsonValue v) {
  kind_ = Kind::kObject;
  std::vector<Member>& members = Write().members;
  for (Member& m : members) {
    if (m.first == key) {
      m.second = std::move(v);
      return m.second;
    }
  }
  members.emplace_back(std::string(key), std::move(v));
  return members.back().second;
}

const JsonValue* JsonValue::Find(std::string_view key) const {
  for (const Member& m : members()) {
    if (m.first == key) return &m.second;
  }
  return nullptr;
}

JsonValue& JsonValue::Push(JsonValue v) {
  kind_ = Kind::kArray;
  std::vector<JsonValue>& elements = Write().elements;
  elements.push_back(std::move(v));
  return elements.back();
}

void JsonValue::AppendJson(std::string* out) const {
  switch (kind_) {
    case Kind::kNull:
      out->append("null");
      break;
    case Kind::kBool:
      out->append(int_ ? "true" : "false");
      break;
    case Kind::kInt:
      AppendInt(out, int_);
      break;
    case Kind::kDouble:
      AppendDouble(out, double_);
      break;
    case Kind::kString:
      JsonLine::AppendQuoted(out, as_string());
      break;
    case Kind::kArray: {
      const std::vector<JsonValue>& elements = this->elements();
      out->push_back('[');
      for (size_t i = 0; i < elements.size(); ++i) {
        if (i) out->push_back(',');
        elements[i].AppendJson(out);
      }
      out->push_back(']');
      break;
    }
    case Kind::kObject: {
      const std::vector<Member>& members = this->members();
      out->push_back('{');
      for (size_t i = 0; i < members.size(); ++i) {
        if (i) out->push_back(',');
        JsonLine::AppendQuoted(out, members[i].first);
        out->push_back(':');
        members[i].second.AppendJson(out);
      }
      out->push_back('}');
      break;
    }
  }
}

std::string JsonValue::ToJson() const {
  std::string out;
  AppendJson(&out);
  return out;
}

std::string JsonValue::ToDisplay() const {
  if (kind_ == Kind::kString) return as_string();
  return ToJson();
}

bool operator==(const JsonValue& a, const JsonValue& b) {
  if (IsNumber(a.kind_) && IsNumber(b.kind_)) return NumbersEqual(a, b);
  if (IsNullLike(a) || IsNullLike(b)) return IsNullLike(a) && IsNullLike(b);
  if (a.kind_ != b.kind_) return false;
  switch (a.kind_) {
    case JsonValue::Kind::kNull:
      return true;
    case JsonValue::Kind::kBool:
      return (a.int_ != 0) == (b.int_ != 0);
    case JsonValue::Kind::kString:
      return a.payload_ == b.payload_ || a.as_string() == b.as_string();
    case JsonValue::Kind::kArray:
      return a.payload_ == b.payload_ || a.elements() == b.elements();
    case JsonValue::Kind::kObject:
      return a.payload_ == b.payload_ || a.members() == b.members();
    default:
      return false;  // numbers handled above
  }
}

}  // namespace dsdiag::trace
