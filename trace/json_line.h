// JsonLine: builds one JSON object on one line, appending to a caller-owned string.
//
// The trace writer and `dsdiag synth` produce millions of records; this builder formats
// numbers with std::to_chars straight into the buffer, so once the buffer has grown to the
// size of a record nothing is allocated per record. It does no escaping work for keys
// (keys are literals chosen by dsdiag) but escapes every string value.
#pragma once

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>

namespace dsdiag::trace {

class JsonLine {
 public:
  // Appends '{' to *out. Call Finish() to close the object and end the line.
  explicit JsonLine(std::string* out) : out_(out) { out_->push_back('{'); }

  JsonLine& Field(std::string_view key, int64_t v) { return Key(key).Int(v); }
  JsonLine& Field(std::string_view key, int v) { return Key(key).Int(v); }
  JsonLine& Field(std::string_view key, uint64_t v) { return Key(key).UInt(v); }
  JsonLine& Field(std::string_view key, double v) { return Key(key).Double(v); }
  // A value that may have been a float32 (a loss read off a tensor): when it is one exactly,
  // the float's shortest form ("4.299058", not "4.299057960510254"), which rounds back to
  // it; otherwise as Field. Trace v2 writes losses so.
  JsonLine& FloatField(std::string_view key, double v) { return Key(key).FloatOrDouble(v); }
  JsonLine& Field(std::string_view key, bool v) { return Key(key).Bool(v); }
  JsonLine& Field(std::string_view key, std::string_view v) { return Key(key).Str(v); }
  JsonLine& Field(std::string_view key, const char* v) { return Key(key).Str(v); }
  JsonLine& Null(std::string_view key) { return Key(key).NullValue(); }
  // A 64-bit hash as 16 lowercase hex digits in a string: JSON numbers lose bits past 2^53.
  JsonLine& Hex(std::string_view key, uint64_t v) { return Key(key).HexValue(v); }
  // `json` must already be valid JSON (an object, array or scalar).
  JsonLine& Raw(std::string_view key, std::string_view json) {
    Key(key);
    out_->append(json);
    return *this;
  }
  // Raw for a key that is not a dsdiag literal (a header section's name, which may come from
  // a file read back): the key is escaped.
  JsonLine& RawEscapedKey(std::string_view key, std::string_view json) {
    Separate();
    AppendQuoted(out_, key);
    out_->push_back(':');
    out_->append(json);
    return *this;
  }

  JsonLine& BeginObject(std::string_view key) { return Key(key).Open('{'); }
  JsonLine& BeginArray(std::string_view key) { return Key(key).Open('['); }
  JsonLine& BeginObject() { return Element().Open('{'); }
  JsonLine& BeginArray() { return Element().Open('['); }
  JsonLine& EndObject() { return Close('}'); }
  JsonLine& EndArray() { return Close(']'); }

  // Array elements.
  JsonLine& Add(int64_t v) { return Element().Int(v); }
  JsonLine& Add(int v) { return Element().Int(v); }
  JsonLine& Add(double v) { return Element().Double(v); }
  JsonLine& Add(bool v) { return Element().Bool(v); }
  JsonLine& Add(std::string_view v) { return Element().Str(v); }
  JsonLine& Add(const char* v) { return Element().Str(v); }
  JsonLine& AddHex(uint64_t v) { return Element().HexValue(v); }

  // Closes the outer object and appends '\n'.
  void Finish() {
    out_->push_back('}');
    out_->push_back('\n');
  }

  // Appends `s` as a JSON string literal (quoted, escaped) to *out.
  static void AppendQuoted(std::string* out, std::string_view s);
  // Appends `,"key":v` to *out: one more member of an object that holds some already, for
  // text spliced together outside a JsonLine.
  static void AppendMember(std::string* out, std::string_view key, int64_t v) {
    out->append(",\"").append(key).append("\":", 2);
    char buf[24];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    out->append(buf, r.ptr);
  }

 private:
  JsonLine& Key(std::string_view key) {
    Separate();
    out_->push_back('"');
    out_->append(key);
    out_->append("\":", 2);
    return *this;
  }
  JsonLine& Element() {
    Separate();
    return *this;
  }
  // Emits the comma between members; bit `depth_` of `has_member_` says whether the
  // current container already holds a member.
  void Separate() {
    const uint64_t bit = uint64_t{1} << depth_;
    if (has_member_ & bit) out_->push_back(',');
    has_member_ |= bit;
  }
  JsonLine& Open(char c) {
    out_->push_back(c);
    ++depth_;
    has_member_ &= ~(uint64_t{1} << depth_);
    return *this;
  }
  JsonLine& Close(char c) {
    out_->push_back(c);
    --depth_;
    return *this;
  }
  JsonLine& Int(int64_t v) {
    char buf[24];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    out_->append(buf, r.ptr);
    return *this;
  }
  JsonLine& UInt(uint64_t v) {
    char buf[24];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    out_->append(buf, r.ptr);
    return *this;
  }
  // Non-finite doubles have no JSON spelling: they are written as null.
  JsonLine& Double(double v);
  JsonLine& FloatOrDouble(double v);
  JsonLine& Bool(bool v) {
    out_->append(v ? "true" : "false");
    return *this;
  }
  JsonLine& Str(std::string_view v) {
    AppendQuoted(out_, v);
    return *this;
  }
  JsonLine& NullValue() {
    out_->append("null");
    return *this;
  }
  JsonLine& HexValue(uint64_t v);

  std::string* out_;
  int depth_ = 0;  // nesting below the outer object; at most 63
  uint64_t has_member_ = 0;
};

}  // namespace dsdiag::trace
