// ProtoEncoder: protocol-buffer wire format written straight into an EventBuffer, the few
// parts a Perfetto trace needs (varints, doubles, strings, nested messages) and nothing
// else: no generated code, no message objects, no allocation per field.
//
// A nested message's length comes before its bytes but is known only after them, so
// Begin() leaves one byte for it and End() writes it, moving the message's bytes along in
// the rare case that it needs more (messages here are mostly under 128 bytes). Nested
// messages close innermost first, as their C++ scopes do.
//
//   ProtoEncoder pb(&buffer);
//   const auto packet = pb.Begin(kTracePacket);
//   pb.Varint(kTimestamp, ts);
//   pb.End(packet);
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

#include "timeline/event_buffer.h"

namespace dsdiag::timeline {

class ProtoEncoder {
 public:
  static constexpr size_t kMaxVarint = 10;

  explicit ProtoEncoder(EventBuffer* out) : out_(out) {}

  // Unsigned and two's-complement integers (int64 fields), and bools.
  void Varint(uint32_t field, uint64_t v) {
    char* p = out_->Room(2 * kMaxVarint);
    out_->Commit(PutVarint(PutVarint(p, Tag(field, kVarint)), v));
  }
  void Int(uint32_t field, int64_t v) { Varint(field, static_cast<uint64_t>(v)); }
  void Double(uint32_t field, double v) {
    char* p = PutVarint(out_->Room(kMaxVarint + sizeof v), Tag(field, kFixed64));
    std::memcpy(p, &v, sizeof v);
    out_->Commit(p + sizeof v);
  }
  void String(uint32_t field, std::string_view s) {
    char* p = out_->Room(2 * kMaxVarint + s.size());
    p = PutVarint(PutVarint(p, Tag(field, kLengthDelimited)), s.size());
    std::memcpy(p, s.data(), s.size());
    out_->Commit(p + s.size());
  }
  // Bytes encoded elsewhere, as they are (a whole message kept for later, say).
  void Raw(std::string_view bytes) { out_->Append(bytes); }

  // A nested message: its tag now, its length at End(mark).
  size_t Begin(uint32_t field) {
    char* p = PutVarint(out_->Room(kMaxVarint + 1), Tag(field, kLengthDelimited));
    out_->Commit(p + 1);  // one byte for the length, written by End
    return out_->size();
  }
  void End(size_t mark) {
    const size_t size = out_->size() - mark;
    if (size < 0x80) {  // the byte Begin left
      out_->data()[mark - 1] = static_cast<char>(size);
      return;
    }
    char length[kMaxVarint];
    const size_t n = static_cast<size_t>(PutVarint(length, size) - length);
    if (n > 1) {  // make room: the message moves n - 1 bytes along
      out_->Room(n - 1);
      char* body = out_->data() + mark;
      std::memmove(body + n - 1, body, size);
      out_->Commit(out_->data() + out_->size() + n - 1);
    }
    std::memcpy(out_->data() + mark - 1, length, n);
  }

  // A message's fixed head written through one Room() (`kMaxVarintField` bytes a field):
  // its varint fields, and nested messages begun there (StartMessage returns the cursor past
  // the byte left for the length; the mark for End is that cursor's offset in the buffer).
  static constexpr size_t kMaxVarintField = 2 * kMaxVarint;
  static char* PutVarintField(char* p, uint32_t field, uint64_t v) {
    return PutVarint(PutVarint(p, Tag(field, kVarint)), v);
  }
  static char* StartMessage(char* p, uint32_t field) {
    return PutVarint(p, Tag(field, kLengthDelimited)) + 1;
  }

  // Reads back a varint PutVarint wrote at `p`, of bytes before `end`; null when it is cut.
  static const char* GetVarint(const char* p, const char* end, uint64_t* v) {
    *v = 0;
    for (int shift = 0; p < end && shift < 64; shift += 7) {
      const auto byte = static_cast<unsigned char>(*p++);
      *v |= uint64_t{byte & 0x7fu} << shift;
      if (byte < 0x80) return p;
    }
    return nullptr;
  }

  static char* PutVarint(char* p, uint64_t v) {
    if (v < 0x80) {  // tags, types, most ids and small values: one byte
      *p = static_cast<char>(v);
      return p + 1;
    }
    while (v >= 0x80) {
      *p++ = static_cast<char>(v | 0x80);
      v >>= 7;
    }
    *p++ = static_cast<char>(v);
    return p;
  }

 private:
  enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2 };
  static uint64_t Tag(uint32_t field, WireType type) { return (uint64_t{field} << 3) | type; }

  EventBuffer* out_;
};

}  // namespace dsdiag::timeline
