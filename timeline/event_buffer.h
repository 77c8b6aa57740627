// EventBuffer: the bytes of Chrome Trace events, written the way tracing libraries write
// events. The timeline writes tens of millions of events; each one is a handful of fixed
// parts (`{"ph":"X","name":`, `,"ts":`) around a few numbers and strings. So a field asks
// the buffer once for room for its worst case (Room), copies its fixed part, and formats
// its number with std::to_chars or its string straight into that room through a pointer:
// no capacity check per byte, no ostringstream, no temporary string, and no allocation once
// the buffer has grown to its working size.
//
// EventArgs writes the members of an event's "args" object into an EventBuffer, with the
// same spelling as trace::JsonLine (shortest doubles, non-finite ones as null, escaped
// strings), so that events read the same whichever way they were written.
#pragma once

#include <charconv>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

namespace dsdiag::timeline {

// The most bytes each formatter below writes.
inline constexpr size_t kMaxIntChars = 20;     // "-9223372036854775808"
inline constexpr size_t kMaxMicrosChars = 24;  // "-9223372036854775.808"
inline constexpr size_t kMaxDoubleChars = 32;  // to_chars' longest shortest form is 24

// Formatters into room the caller has made; each returns the end of what it wrote.
inline char* PutInt(char* p, int64_t v) { return std::to_chars(p, p + kMaxIntChars, v).ptr; }
// units / 10^kDecimals as an exact decimal, trailing zeros dropped (a template, so that the
// divisions are by constants): <3>(1234567) -> "1234.567", <3>(-5) -> "-0.005", <3>(2000)
// -> "2".
template <int kDecimals>
char* PutDecimal(char* p, int64_t units) {
  static_assert(kDecimals > 0 && kDecimals <= 9);
  uint64_t scale = 1;
  for (int i = 0; i < kDecimals; ++i) scale *= 10;
  // |INT64_MIN| has no int64 spelling: go through uint64.
  const uint64_t magnitude =
      units < 0 ? 0 - static_cast<uint64_t>(units) : static_cast<uint64_t>(units);
  if (units < 0) *p++ = '-';
  p = std::to_chars(p, p + kMaxIntChars, magnitude / scale).ptr;
  uint64_t fraction = magnitude % scale;
  if (fraction == 0) return p;
  *p = '.';
  for (int i = kDecimals; i > 0; --i, fraction /= 10) p[i] = static_cast<char>('0' + fraction % 10);
  int n = kDecimals;
  while (p[n] == '0') --n;  // "1.5", not "1.500"
  return p + 1 + n;
}
// ns as exact microseconds.
inline char* PutMicros(char* p, int64_t ns) { return PutDecimal<3>(p, ns); }
// ns as milliseconds, the same number as PutDouble(ns / 1e6) (the double nearest to the
// exact decimal, which is what a reader makes of it) without formatting a double: ns below
// 10^15 have at most 15 digits, so no shorter decimal reads back as the same double. The
// spelling differs where PutDouble picks an exponent ("5e-05" for 50 ns).
char* PutMillis(char* p, int64_t ns);
// JsonLine's doubles: the shortest form that reads back, exponent notation past 2^63 (JSON
// parsers reject integers beyond uint64), null when not finite.
char* PutDouble(char* p, double v);
// `s` quoted and escaped as a JSON string; needs QuotedRoom(s.size()) bytes.
char* PutQuoted(char* p, std::string_view s);
constexpr size_t QuotedRoom(size_t n) { return 2 + 6 * n; }  // every byte as \u00XX

class EventBuffer {
 public:
  EventBuffer() = default;
  EventBuffer(const EventBuffer&) = delete;
  EventBuffer& operator=(const EventBuffer&) = delete;
  // Two buffers trade their memory and contents (background_write.h hands them over).
  friend void swap(EventBuffer& a, EventBuffer& b) noexcept {
    std::swap(a.data_, b.data_);
    std::swap(a.size_, b.size_);
    std::swap(a.capacity_, b.capacity_);
  }

  const char* data() const { return data_.get(); }
  char* data() { return data_.get(); }
  size_t size() const { return size_; }
  std::string_view view() const { return {data_.get(), size_}; }
  void clear() { size_ = 0; }
  // Room for `capacity` bytes in all, made now: a buffer that will fill to a known size
  // grows once, not by doubling and copying.
  void Reserve(size_t capacity) {
    if (capacity > capacity_) Grow(capacity - size_);
  }
  // Gives the memory back (clear() keeps it for the next events).
  void Release();

  // Room for `n` more bytes: where they go. The caller writes at most n and calls Commit
  // with the end of what it wrote.
  char* Room(size_t n) {
    if (capacity_ - size_ < n) Grow(n);
    return data_.get() + size_;
  }
  void Commit(const char* end) { size_ = static_cast<size_t>(end - data_.get()); }

  void Append(std::string_view s) {
    std::memcpy(Room(s.size()), s.data(), s.size());
    size_ += s.size();
  }
  void Append(char c) {
    *Room(1) = c;
    ++size_;
  }
  void Int(int64_t v) { Commit(PutInt(Room(kMaxIntChars), v)); }
  void Micros(int64_t ns) { Commit(PutMicros(Room(kMaxMicrosChars), ns)); }
  void Double(double v) { Commit(PutDouble(Room(kMaxDoubleChars), v)); }
  void Quoted(std::string_view s) { Commit(PutQuoted(Room(QuotedRoom(s.size())), s)); }

 private:
  void Grow(size_t n);

  std::unique_ptr<char[]> data_;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

// The members of one "args" object, written into an EventBuffer after its '{'.
class EventArgs {
 public:
  explicit EventArgs(EventBuffer* out) : out_(out) {}

  EventArgs& Field(std::string_view key, int64_t v) {
    Key(key, kMaxIntChars);
    out_->Int(v);
    return *this;
  }
  EventArgs& Field(std::string_view key, int v) { return Field(key, int64_t{v}); }
  EventArgs& Field(std::string_view key, uint64_t v) {
    Key(key, kMaxIntChars);
    char* p = out_->Room(kMaxIntChars);
    out_->Commit(std::to_chars(p, p + kMaxIntChars, v).ptr);
    return *this;
  }
  EventArgs& Field(std::string_view key, double v) {
    Key(key, kMaxDoubleChars);
    out_->Double(v);
    return *this;
  }
  EventArgs& Field(std::string_view key, bool v) {
    Key(key, 5);
    out_->Append(v ? std::string_view("true") : std::string_view("false"));
    return *this;
  }
  EventArgs& Field(std::string_view key, std::string_view v) {
    Key(key, QuotedRoom(v.size()));
    out_->Quoted(v);
    return *this;
  }
  EventArgs& Field(std::string_view key, const char* v) { return Field(key, std::string_view(v)); }
  EventArgs& Field(std::string_view key, const std::string& v) {
    return Field(key, std::string_view(v));
  }
  EventArgs& Null(std::string_view key) {
    Key(key, 4);
    out_->Append("null");
    return *this;
  }

 private:
  // `,"key":` (no comma before the first member); `value_room`: what the value will need.
  void Key(std::string_view key, size_t value_room) {
    char* p = out_->Room(key.size() + 4 + value_room);
    if (has_member_) *p++ = ',';
    has_member_ = true;
    *p++ = '"';
    std::memcpy(p, key.data(), key.size());
    p += key.size();
    *p++ = '"';
    *p++ = ':';
    out_->Commit(p);
  }

  EventBuffer* out_;
  bool has_member_ = false;
};

}  // namespace dsdiag::timeline
