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

JsonValue& JsonValue::Set(std::string_view key, JsonValue v) {
  kind_ = Kind::kObject;
  for (Member& m : members_) {
    if (m.first == key) {
      m.second = std::move(v);
      return m.second;
    }
  }
  members_.emplace_back(std::string(key), std::move(v));
  return members_.back().second;
}

const JsonValue* JsonValue::Find(std::string_view key) const {
  for (const Member& m : members_) {
    if (m.first == key) return &m.second;
  }
  return nullptr;
}

JsonValue& JsonValue::Push(JsonValue v) {
  kind_ = Kind::kArray;
  elements_.push_back(std::move(v));
  return elements_.back();
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
      JsonLine::AppendQuoted(out, string_);
      break;
    case Kind::kArray: {
      out->push_back('[');
      for (size_t i = 0; i < elements_.size(); ++i) {
        if (i) out->push_back(',');
        elements_[i].AppendJson(out);
      }
      out->push_back(']');
      break;
    }
    case Kind::kObject: {
      out->push_back('{');
      for (size_t i = 0; i < members_.size(); ++i) {
        if (i) out->push_back(',');
        JsonLine::AppendQuoted(out, members_[i].first);
        out->push_back(':');
        members_[i].second.AppendJson(out);
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
  if (kind_ == Kind::kString) return string_;
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
      return a.string_ == b.string_;
    case JsonValue::Kind::kArray:
      return a.elements_ == b.elements_;
    case JsonValue::Kind::kObject:
      return a.members_ == b.members_;
    default:
      return false;  // numbers handled above
  }
}

}  // namespace dsdiag::trace
