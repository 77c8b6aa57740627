// The error-path JSON scanner: the byte it blames and what it says was expected.
#include "trace/json_syntax.h"

#include <gtest/gtest.h>

namespace dsdiag::trace {
namespace {

struct Case {
  std::string line;
  size_t offset;
  std::string expected;
};

class SyntaxErrorTest : public ::testing::TestWithParam<Case> {};

TEST_P(SyntaxErrorTest, PointsAtTheFirstOffendingByte) {
  const Case& c = GetParam();
  const std::optional<SyntaxError> e = CheckJsonObjectLine(c.line);
  ASSERT_TRUE(e.has_value()) << c.line;
  EXPECT_EQ(e->offset, c.offset) << c.line;
  EXPECT_EQ(e->expected, c.expected) << c.line;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, SyntaxErrorTest,
    ::testing::Values(
        Case{"", 0, "a JSON object ('{')"}, Case{"   ", 3, "a JSON object ('{')"},
        Case{"garbage", 0, "a JSON object ('{')"}, Case{"[1,2]", 0, "a JSON object ('{')"},
        Case{std::string("\0\0{}", 4), 0, "a JSON object ('{')"},
        Case{"{", 1, "'\"' to start a member name, or '}'"},
        Case{"{\"a\":1,}", 7, "'\"' to start a member name"},
        Case{"{\"a\" 1}", 5, "':' after the member name"}, Case{"{\"a\":}", 5, "a value"},
        Case{"{\"a\":1 \"b\":2}", 7, "',' or '}' after a member"},
        Case{"{\"a\":[1 2]}", 8, "',' or ']' after an element"}, Case{"{\"a\":[1,]}", 8, "a value"},
        Case{"{\"a\":\"abc", 9, "'\"' to end the string"},
        Case{"{\"a\":\"x\ty\"}", 7,
             "a printable character in the string (control bytes must be escaped)"},
        Case{"{\"a\":\"\\q\"}", 6, "an escape (\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)"},
        Case{"{\"a\":\"\\u12G4\"}", 10, "four hex digits after '\\u'"},
        Case{"{\"a\":\"\\ud800\"}", 12, "'\\u' with a low surrogate after a high surrogate"},
        Case{"{\"a\":\"\\udc00\"}", 6, "a \\u escape that is not a lone low surrogate"},
        Case{"{\"a\":\"\xff\"}", 6, "valid UTF-8 in the string"},
        Case{"{\"a\":\"\xed\xa0\x80\"}", 6, "valid UTF-8 in the string"},  // a surrogate
        Case{"{\"a\":\"\xc0\xaf\"}", 6, "valid UTF-8 in the string"},      // overlong
        Case{"{\"a\":\"\xe2\x82\"}", 6, "valid UTF-8 in the string"},      // cut short
        Case{"{\"a\":-}", 6, "a digit"},
        Case{"{\"a\":01}", 6, "the end of the number (no leading zeros)"},
        Case{"{\"a\":1.}", 7, "a digit after '.'"},
        Case{"{\"a\":1e}", 7, "a digit in the exponent"},
        Case{"{\"a\":18446744073709551616}", 5, "an integer within 64 bits"},
        Case{"{\"a\":-9223372036854775809}", 5, "an integer within 64 bits"},
        Case{"{\"a\":1e400}", 5, "a number within the range of a double"},
        Case{"{\"a\":tru}", 5, "a value"}, Case{"{\"a\":nul}", 5, "a value"},
        Case{"{} x", 3, "the end of the line after the record"},
        Case{"{}{}", 2, "the end of the line after the record"},
        Case{std::string(2000, '['), 0, "a JSON object ('{')"},
        Case{"{\"a\":" + std::string(1100, '['), 5 + 1023, "nesting at most 1024 levels deep"}));

TEST(JsonSyntax, AcceptsWhatTheFormatWrites) {
  for (std::string ok :
       {"{}", " {\"a\":1} ", "{\"a\":[1,-2.5e-3,true,false,null,{\"b\":\"\\u00e9\\n\"}]}",
        "{\"a\":\"\\ud83d\\ude00\"}", "{\"a\":\"\xf0\x9f\x98\x80\xc3\xa9\"}",
        "{\"a\":18446744073709551615,\"b\":-9223372036854775808}", "{}\r"}) {
    EXPECT_FALSE(CheckJsonObjectLine(ok).has_value()) << ok;
  }
}

TEST(JsonSyntax, FindsTopLevelValuesOnly) {
  const std::string line = R"({"config":{"ts":1},"ts" : 42,"step":7})";
  EXPECT_EQ(FindTopLevelValue(line, "ts")->offset, line.find("42"));
  EXPECT_EQ(FindTopLevelValue(line, "ts")->length, 2u);
  EXPECT_EQ(FindTopLevelValue(line, "step")->offset, line.find("7"));
  EXPECT_EQ(FindTopLevelValue(line, "config")->offset, line.find("{\"ts\""));
  EXPECT_EQ(FindTopLevelValue(line, "config")->length, 8u);
  EXPECT_FALSE(FindTopLevelValue(line, "missing").has_value());
  EXPECT_EQ(DescribeValue(line, *FindTopLevelValue(line, "config")), "'{\"ts\":1}'");
}

TEST(JsonSyntax, DescribesBytesPrintably) {
  EXPECT_EQ(DescribeBytesAt("abc", 3), "end of line");
  EXPECT_EQ(DescribeBytesAt(std::string("\0x", 2), 0), "byte 0x00");
  EXPECT_EQ(DescribeBytesAt("\xff", 0), "byte 0xff");
  EXPECT_EQ(DescribeBytesAt("hello", 1), "'ello'");
  EXPECT_EQ(DescribeBytesAt(std::string(40, 'x'), 0, 4), "'xxxx'...");
  EXPECT_EQ(DescribeBytesAt(std::string("ab\x01", 3), 0), "'ab'...");
}

}  // namespace
}  // namespace dsdiag::trace
