#include "timeline/event_buffer.h"

#include <algorithm>
#include <cmath>

namespace dsdiag::timeline {

char* PutMillis(char* p, int64_t ns) {
  constexpr int64_t kExact = 1000000000000000;  // 10^15
  if (ns > -kExact && ns < kExact) return PutDecimal<6>(p, ns);
  return PutDouble(p, static_cast<double>(ns) / 1e6);
}

char* PutDouble(char* p, double v) {
  if (!std::isfinite(v)) {
    std::memcpy(p, "null", 4);
    return p + 4;
  }
  char* const end = p + kMaxDoubleChars;
  return std::fabs(v) < 9223372036854775808.0
             ? std::to_chars(p, end, v).ptr
             : std::to_chars(p, end, v, std::chars_format::scientific).ptr;
}

char* PutQuoted(char* p, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  *p++ = '"';
  // Most strings need no escape: copy the clean run up to the first byte that does at once.
  size_t clean = 0;
  while (clean < s.size()) {
    const auto u = static_cast<unsigned char>(s[clean]);
    if (u < 0x20 || u == '"' || u == '\\') break;
    ++clean;
  }
  std::memcpy(p, s.data(), clean);
  p += clean;
  for (const char c : s.substr(clean)) {
    const auto u = static_cast<unsigned char>(c);
    const char short_escape = c == '"'    ? '"'
                              : c == '\\' ? '\\'
                              : c == '\n' ? 'n'
                              : c == '\r' ? 'r'
                              : c == '\t' ? 't'
                                          : '\0';
    if (short_escape != '\0') {
      *p++ = '\\';
      *p++ = short_escape;
    } else if (u < 0x20) {
      std::memcpy(p, "\\u00", 4);
      p[4] = kHex[u >> 4];
      p[5] = kHex[u & 15];
      p += 6;
    } else {
      *p++ = c;
    }
  }
  *p++ = '"';
  return p;
}

void EventBuffer::Grow(size_t n) {
  const size_t capacity = std::max({capacity_ * 2, size_ + n, size_t{4096}});
  std::unique_ptr<char[]> data(new char[capacity]);
  if (size_ > 0) std::memcpy(data.get(), data_.get(), size_);
  data_ = std::move(data);
  capacity_ = capacity;
}

void EventBuffer::Release() {
  data_.reset();
  size_ = capacity_ = 0;
}

}  // namespace dsdiag::timeline
