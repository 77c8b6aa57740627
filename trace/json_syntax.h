// JsonSyntax: a small hand-written JSON checker that says *where* a line stops being valid.
//
// simdjson parses the trace fast but only reports an error kind, not a position. When it
// rejects a line, the reader runs this scanner over that line (the error path only) to find
// the byte at which the line goes wrong and what was expected there, so that the user reads
// "rank-00001.jsonl:17:42: expected ',' or '}' after a member". It accepts what simdjson
// accepts: strict RFC 8259, UTF-8 validated, integers within int64/uint64, finite doubles,
// nesting at most kMaxDepth.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace dsdiag::trace {

struct SyntaxError {
  size_t offset = 0;     // 0-based byte offset of the first offending byte
  std::string expected;  // e.g. "',' or '}' after a member"
};

// Checks that `line` is exactly one JSON object, optionally surrounded by whitespace.
// Returns the first error, or nullopt when the line is a valid object.
std::optional<SyntaxError> CheckJsonObjectLine(std::string_view line);

// Where the value of top-level member `key` lies in a line holding a JSON object (the
// first such member), or nullopt. Keys written with escapes are not matched.
struct ValueSpan {
  size_t offset = 0;  // 0-based
  size_t length = 0;
};
std::optional<ValueSpan> FindTopLevelValue(std::string_view line, std::string_view key);

// Where the value at `path` lies in a text holding one JSON object: members by name,
// elements by index, e.g. "points[1].workers"; nullopt when there is none.
std::optional<ValueSpan> FindValueAt(std::string_view text, std::string_view path);

// DescribeBytesAt for the bytes of one value only.
std::string DescribeValue(std::string_view line, ValueSpan span);

// A short printable rendering of the bytes at `offset` for messages: "end of line" past the
// end, "byte 0xNN" for a control or non-ASCII byte, else up to `max` bytes in single quotes.
std::string DescribeBytesAt(std::string_view line, size_t offset, size_t max = 24);

}  // namespace dsdiag::trace
