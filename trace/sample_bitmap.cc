#include "trace/sample_bitmap.h"

namespace dsdiag::trace {
namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// Decodes standard base64 (padding optional); nullopt on a character outside the alphabet.
std::optional<std::vector<uint8_t>> DecodeBase64(std::string_view text) {
  std::vector<uint8_t> out;
  out.reserve(text.size() / 4 * 3);
  uint32_t acc = 0;
  int bits = 0;
  for (char c : text) {
    int v;
    if (c >= 'A' && c <= 'Z')
      v = c - 'A';
    else if (c >= 'a' && c <= 'z')
      v = c - 'a' + 26;
    else if (c >= '0' && c <= '9')
      v = c - '0' + 52;
    else if (c == '+')
      v = 62;
    else if (c == '/')
      v = 63;
    else if (c == '=')
      break;
    else
      return std::nullopt;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<uint8_t>((acc >> bits) & 0xff));
    }
  }
  return out;
}

}  // namespace

std::string EncodeSampleBitmap(const std::vector<uint64_t>& members, int64_t size) {
  std::string bytes(static_cast<size_t>((size + 7) / 8), '\0');
  for (uint64_t i : members)
    if (i < static_cast<uint64_t>(size)) bytes[i / 8] |= static_cast<char>(1u << (i % 8));
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const size_t left = bytes.size() - i;
    uint32_t v = static_cast<uint8_t>(bytes[i]) << 16;
    if (left > 1) v |= static_cast<uint8_t>(bytes[i + 1]) << 8;
    if (left > 2) v |= static_cast<uint8_t>(bytes[i + 2]);
    out.push_back(kAlphabet[(v >> 18) & 63]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(left > 1 ? kAlphabet[(v >> 6) & 63] : '=');
    out.push_back(left > 2 ? kAlphabet[v & 63] : '=');
  }
  return out;
}

std::optional<std::vector<uint64_t>> DecodeSampleBitmap(std::string_view bits, int64_t size) {
  const auto bytes = DecodeBase64(bits);
  if (!bytes || static_cast<int64_t>(bytes->size()) * 8 < size) return std::nullopt;
  std::vector<uint64_t> members;
  for (int64_t i = 0; i < size; ++i)
    if ((*bytes)[static_cast<size_t>(i / 8)] >> (i % 8) & 1)
      members.push_back(static_cast<uint64_t>(i));
  return members;
}

}  // namespace dsdiag::trace
