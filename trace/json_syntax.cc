#include "trace/json_syntax.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

namespace dsdiag::trace {
namespace {

// simdjson's default maximum nesting depth.
constexpr int kMaxDepth = 1024;

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsHexDigit(char c) { return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool IsContinuation(unsigned char c) { return (c & 0xC0) == 0x80; }

int HexValue(char c) {
  if (IsDigit(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return c - 'A' + 10;
}

// Recursive-descent scanner. Each Scan* function starts at pos_ and leaves pos_ after
// what it consumed, or records the first error and returns false.
class Scanner {
 public:
  explicit Scanner(std::string_view text) : s_(text) {}
  // Also looks for the value at `path` ("points[1].workers": members by name, elements by
  // index from 0); found() has it once scanned.
  Scanner(std::string_view text, std::string_view path) : s_(text), target_(path) {}
  const std::optional<ValueSpan>& found() const { return found_; }

  bool ScanLine() {
    SkipWhitespace();
    if (Peek() != '{') return Fail(pos_, "a JSON object ('{')");
    if (!ScanObject(1, /*top=*/true)) return false;
    SkipWhitespace();
    if (!AtEnd()) return Fail(pos_, "the end of the line after the record");
    return true;
  }

  const SyntaxError& error() const { return error_; }

  // Top-level members seen by ScanLine: raw key text (between the quotes) and value span.
  const std::vector<std::pair<std::string_view, ValueSpan>>& top_members() const {
    return top_members_;
  }

 private:
  bool AtEnd() const { return pos_ >= s_.size(); }
  char Peek() const { return AtEnd() ? '\0' : s_[pos_]; }

  bool Fail(size_t at, const char* expected) {
    error_.offset = at;
    error_.expected = expected;
    return false;
  }

  void SkipWhitespace() {
    while (!AtEnd()) {
      const char c = s_[pos_];
      if (c != ' ' && c != '\t' && c != '\r' && c != '\n') break;
      ++pos_;
    }
  }

  bool ScanValue(int depth) {
    switch (Peek()) {
      case '{':
        return ScanObject(depth + 1, false);
      case '[':
        return ScanArray(depth + 1);
      case '"':
        return ScanString();
      case 't':
        return ScanLiteral("true");
      case 'f':
        return ScanLiteral("false");
      case 'n':
        return ScanLiteral("null");
      default:
        if (Peek() == '-' || IsDigit(Peek())) return ScanNumber();
        return Fail(pos_, "a value");
    }
  }

  bool ScanObject(int depth, bool top) {
    if (depth > kMaxDepth) return Fail(pos_, "nesting at most 1024 levels deep");
    ++pos_;  // '{'
    SkipWhitespace();
    if (Peek() == '}') {
      ++pos_;
      return true;
    }
    bool first = true;
    for (;;) {
      if (Peek() != '"') {
        return Fail(pos_,
                    first ? "'\"' to start a member name, or '}'" : "'\"' to start a member name");
      }
      first = false;
      const size_t key_begin = pos_ + 1;
      if (!ScanString()) return false;
      const std::string_view key = s_.substr(key_begin, pos_ - 1 - key_begin);
      SkipWhitespace();
      if (Peek() != ':') return Fail(pos_, "':' after the member name");
      ++pos_;
      SkipWhitespace();
      const size_t value_begin = pos_;
      const size_t parent = Enter(key, /*element=*/false);
      const bool ok = ScanValue(depth);
      Leave(parent, value_begin, ok);
      if (top)
        top_members_.push_back({key, {value_begin, (ok ? pos_ : error_.offset) - value_begin}});
      if (!ok) return false;
      SkipWhitespace();
      if (Peek() == ',') {
        ++pos_;
        SkipWhitespace();
        continue;
      }
      if (Peek() == '}') {
        ++pos_;
        return true;
      }
      return Fail(pos_, "',' or '}' after a member");
    }
  }

  bool ScanArray(int depth) {
    if (depth > kMaxDepth) return Fail(pos_, "nesting at most 1024 levels deep");
    ++pos_;  // '['
    SkipWhitespace();
    if (Peek() == ']') {
      ++pos_;
      return true;
    }
    for (size_t index = 0;; ++index) {
      const size_t value_begin = pos_;
      const size_t parent = Enter(std::to_string(index), /*element=*/true);
      const bool ok = ScanValue(depth);
      Leave(parent, value_begin, ok);
      if (!ok) return false;
      SkipWhitespace();
      if (Peek() == ',') {
        ++pos_;
        SkipWhitespace();
        continue;
      }
      if (Peek() == ']') {
        ++pos_;
        return true;
      }
      return Fail(pos_, "',' or ']' after an element");
    }
  }

  // The path of the value about to be scanned, when a target is set; returns the parent's
  // path length for Leave().
  size_t Enter(std::string_view name, bool element) {
    const size_t parent = path_.size();
    if (target_.empty()) return parent;
    if (element) {
      path_.append("[").append(name).append("]");
    } else {
      if (!path_.empty()) path_.push_back('.');
      path_.append(name);
    }
    return parent;
  }
  void Leave(size_t parent, size_t value_begin, bool ok) {
    if (!target_.empty() && !found_ && path_ == target_)
      found_ = ValueSpan{value_begin, (ok ? pos_ : error_.offset) - value_begin};
    path_.resize(parent);
  }

  bool ScanLiteral(std::string_view word) {
    if (s_.substr(pos_, word.size()) != word) return Fail(pos_, "a value");
    pos_ += word.size();
    return true;
  }

  bool ScanNumber() {
    const size_t begin = pos_;
    const bool negative = Peek() == '-';
    if (negative) ++pos_;
    if (!IsDigit(Peek())) return Fail(pos_, "a digit");
    if (Peek() == '0') {
      ++pos_;
      if (IsDigit(Peek())) return Fail(pos_, "the end of the number (no leading zeros)");
    } else {
      while (IsDigit(Peek())) ++pos_;
    }
    bool integer = true;
    if (Peek() == '.') {
      integer = false;
      ++pos_;
      if (!IsDigit(Peek())) return Fail(pos_, "a digit after '.'");
      while (IsDigit(Peek())) ++pos_;
    }
    if (Peek() == 'e' || Peek() == 'E') {
      integer = false;
      ++pos_;
      if (Peek() == '+' || Peek() == '-') ++pos_;
      if (!IsDigit(Peek())) return Fail(pos_, "a digit in the exponent");
      while (IsDigit(Peek())) ++pos_;
    }
    return CheckRange(begin, negative, integer);
  }

  // simdjson stores integers as int64 or uint64 and other numbers as finite doubles.
  bool CheckRange(size_t begin, bool negative, bool integer) {
    const std::string text(s_.substr(begin, pos_ - begin));
    errno = 0;
    if (integer) {
      if (negative) {
        std::strtoll(text.c_str(), nullptr, 10);
      } else {
        std::strtoull(text.c_str(), nullptr, 10);
      }
      if (errno == ERANGE) return Fail(begin, "an integer within 64 bits");
      return true;
    }
    const double d = std::strtod(text.c_str(), nullptr);
    if (std::isinf(d)) return Fail(begin, "a number within the range of a double");
    return true;
  }

  bool ScanString() {
    ++pos_;  // opening '"'
    for (;;) {
      if (AtEnd()) return Fail(pos_, "'\"' to end the string");
      const auto c = static_cast<unsigned char>(s_[pos_]);
      if (c == '"') {
        ++pos_;
        return true;
      }
      if (c == '\\') {
        if (!ScanEscape()) return false;
      } else if (c < 0x20) {
        return Fail(pos_, "a printable character in the string (control bytes must be escaped)");
      } else if (c < 0x80) {
        ++pos_;
      } else if (!ScanUtf8()) {
        return false;
      }
    }
  }

  bool ScanEscape() {
    const size_t at = pos_;
    ++pos_;  // '\'
    switch (Peek()) {
      case '"':
      case '\\':
      case '/':
      case 'b':
      case 'f':
      case 'n':
      case 'r':
      case 't':
        ++pos_;
        return true;
      case 'u':
        break;
      default:
        return Fail(at, "an escape (\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)");
    }
    int unit = 0;
    if (!ScanHex4(&unit)) return false;
    if (unit >= 0xDC00 && unit <= 0xDFFF)
      return Fail(at, "a \\u escape that is not a lone low surrogate");
    if (unit < 0xD800 || unit > 0xDBFF) return true;
    // A high surrogate must be followed by an escaped low surrogate.
    if (s_.substr(pos_, 2) != "\\u")
      return Fail(pos_, "'\\u' with a low surrogate after a high surrogate");
    const size_t low_at = pos_;
    ++pos_;
    if (!ScanHex4(&unit)) return false;
    if (unit < 0xDC00 || unit > 0xDFFF) return Fail(low_at, "a low surrogate (\\uDC00-\\uDFFF)");
    return true;
  }

  // At the 'u' of "\uXXXX": consumes it and the four hex digits.
  bool ScanHex4(int* unit) {
    ++pos_;  // 'u'
    *unit = 0;
    for (int i = 0; i < 4; ++i) {
      if (!IsHexDigit(Peek())) return Fail(pos_, "four hex digits after '\\u'");
      *unit = *unit * 16 + HexValue(Peek());
      ++pos_;
    }
    return true;
  }

  // A multi-byte UTF-8 sequence: no overlong forms, no surrogates, at most U+10FFFF.
  bool ScanUtf8() {
    const auto byte = [this](size_t i) {
      return pos_ + i < s_.size() ? static_cast<unsigned char>(s_[pos_ + i]) : 0;
    };
    const unsigned char lead = byte(0);
    int length = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    if (lead >= 0xC2 && lead <= 0xDF) {
      length = 2;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      length = 3;
      if (lead == 0xE0) lo = 0xA0;
      if (lead == 0xED) hi = 0x9F;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      length = 4;
      if (lead == 0xF0) lo = 0x90;
      if (lead == 0xF4) hi = 0x8F;
    } else {
      return Fail(pos_, "valid UTF-8 in the string");
    }
    if (byte(1) < lo || byte(1) > hi) return Fail(pos_, "valid UTF-8 in the string");
    for (int i = 2; i < length; ++i) {
      if (!IsContinuation(byte(i))) return Fail(pos_, "valid UTF-8 in the string");
    }
    pos_ += length;
    return true;
  }

  std::string_view s_;
  size_t pos_ = 0;
  SyntaxError error_;
  std::vector<std::pair<std::string_view, ValueSpan>> top_members_;
  std::string_view target_;  // FindValueAt's path; empty: none
  std::string path_;         // of the value being scanned (only with a target)
  std::optional<ValueSpan> found_;
};

}  // namespace

std::optional<SyntaxError> CheckJsonObjectLine(std::string_view line) {
  Scanner scanner(line);
  if (scanner.ScanLine()) return std::nullopt;
  return scanner.error();
}

std::optional<ValueSpan> FindTopLevelValue(std::string_view line, std::string_view key) {
  Scanner scanner(line);
  scanner.ScanLine();  // members before an error are still listed
  for (const auto& [k, span] : scanner.top_members()) {
    if (k == key) return span;
  }
  return std::nullopt;
}

std::optional<ValueSpan> FindValueAt(std::string_view text, std::string_view path) {
  Scanner scanner(text, path);
  scanner.ScanLine();
  return scanner.found();
}

std::string DescribeValue(std::string_view line, ValueSpan span) {
  if (span.length == 0) return DescribeBytesAt(line, span.offset);  // not located
  return DescribeBytesAt(line.substr(0, span.offset + span.length), span.offset, 40);
}

std::string DescribeBytesAt(std::string_view line, size_t offset, size_t max) {
  if (offset >= line.size()) return "end of line";
  const auto first = static_cast<unsigned char>(line[offset]);
  static constexpr char kHex[] = "0123456789abcdef";
  if (first < 0x20 || first >= 0x7F) {
    std::string out = "byte 0x";
    out.push_back(kHex[first >> 4]);
    out.push_back(kHex[first & 15]);
    return out;
  }
  std::string out = "'";
  size_t i = offset;
  for (; i < line.size() && i < offset + max; ++i) {
    const auto c = static_cast<unsigned char>(line[i]);
    if (c < 0x20 || c >= 0x7F) break;  // stop before unprintable bytes
    out.push_back(static_cast<char>(c));
  }
  out.push_back('\'');
  if (i < line.size()) out.append("...");
  return out;
}

}  // namespace dsdiag::trace
