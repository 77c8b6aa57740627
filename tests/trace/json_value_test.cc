// JsonLine and JsonValue: escaping, number spelling, nesting, and round trips through the
// parser the reader uses.
#include "trace/json_value.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "trace/json_line.h"
#include "trace/trace_reader.h"

namespace dsdiag::trace {
namespace {

// Parses `json` with simdjson and converts it back to a JsonValue.
JsonValue Reparse(const std::string& json) {
  simdjson::dom::parser parser;
  simdjson::dom::element element;
  const simdjson::padded_string padded(json);
  EXPECT_EQ(parser.parse(padded).get(element), simdjson::SUCCESS) << json;
  return ToJsonValue(element);
}

TEST(JsonLine, EscapesEveryStringValue) {
  std::string out;
  JsonLine::AppendQuoted(&out, std::string("a\"b\\c\nd\re\tf\x01g\x1f", 14));
  EXPECT_EQ(out, R"("a\"b\\c\nd\re\tf\u0001g\u001f")");
  out.clear();
  JsonLine::AppendQuoted(&out, std::string("nul\0x", 5));
  EXPECT_EQ(out, R"("nul\u0000x")");
  out.clear();
  JsonLine::AppendQuoted(&out, "h\xc3\xa9llo");  // UTF-8 passes through unchanged
  EXPECT_EQ(out, "\"h\xc3\xa9llo\"");
}

TEST(JsonLine, BuildsNestedRecordOnOneLine) {
  std::string out;
  JsonLine line(&out);
  line.Field("type", "step").Field("ts", int64_t{-5}).Field("n", uint64_t{18446744073709551615u});
  line.BeginObject("phases").Field("data", 1).Field("forward", 2).EndObject();
  line.BeginArray("h").AddHex(0x0123456789abcdefu).AddHex(0).EndArray();
  line.BeginArray("nested")
      .BeginArray()
      .Add(1)
      .Add(2)
      .EndArray()
      .BeginObject()
      .EndObject()
      .EndArray();
  line.Field("ok", true).Null("none").Hex("one", 1).Raw("raw", R"({"x":[1]})");
  line.Finish();
  EXPECT_EQ(out,
            R"({"type":"step","ts":-5,"n":18446744073709551615,"phases":{"data":1,"forward":2},)"
            R"("h":["0123456789abcdef","0000000000000000"],"nested":[[1,2],{}],"ok":true,)"
            R"("none":null,"one":"0000000000000001","raw":{"x":[1]}})"
            "\n");
}

TEST(JsonLine, DoublesAreShortestAndNonFiniteIsNull) {
  std::string out;
  JsonLine line(&out);
  line.Field("a", 0.1).Field("b", 2.0).Field("c", 1e300).Field("d", -2.5e-7);
  line.Field("nan", std::nan("")).Field("inf", -std::numeric_limits<double>::infinity());
  line.Finish();
  EXPECT_EQ(out, "{\"a\":0.1,\"b\":2,\"c\":1e+300,\"d\":-2.5e-07,\"nan\":null,\"inf\":null}\n");
}

TEST(JsonValue, SetReplacesAndKeepsInsertionOrder) {
  JsonValue o = JsonValue::Object();
  o.Set("b", 1);
  o.Set("a", "x");
  o.Set("b", 2.5);
  ASSERT_EQ(o.members().size(), 2u);
  EXPECT_EQ(o.members()[0].first, "b");
  EXPECT_EQ(o.Find("b")->as_double(), 2.5);
  EXPECT_EQ(o.Find("a")->as_string(), "x");
  EXPECT_EQ(o.Find("missing"), nullptr);
  EXPECT_EQ(o.ToJson(), R"({"b":2.5,"a":"x"})");
}

TEST(JsonValue, CompactJsonForEveryKind) {
  JsonValue o = JsonValue::Object();
  o.Set("null", JsonValue());
  o.Set("t", true);
  o.Set("f", false);
  o.Set("i", int64_t{-9223372036854775807 - 1});
  o.Set("d", 0.30000000000000004);
  o.Set("s", "q\"uote\n");
  JsonValue a = JsonValue::Array();
  a.Push(1);
  a.Push(JsonValue::Array());
  a.Push(JsonValue::Object()).Set("k", "v");
  o.Set("a", a);
  o.Set("nan", std::nan(""));
  EXPECT_EQ(o.ToJson(),
            R"({"null":null,"t":true,"f":false,"i":-9223372036854775808,)"
            R"("d":0.30000000000000004,"s":"q\"uote\n","a":[1,[],{"k":"v"}],"nan":null})");
}

TEST(JsonValue, DisplayUnquotesTopLevelStringsOnly) {
  EXPECT_EQ(JsonValue("abc").ToDisplay(), "abc");
  EXPECT_EQ(JsonValue(3).ToDisplay(), "3");
  EXPECT_EQ(JsonValue(0.5).ToDisplay(), "0.5");
  EXPECT_EQ(JsonValue().ToDisplay(), "null");
  JsonValue a = JsonValue::Array();
  a.Push("x");
  EXPECT_EQ(a.ToDisplay(), R"(["x"])");
}

TEST(JsonValue, EqualityComparesNumbersByValue) {
  EXPECT_EQ(JsonValue(2), JsonValue(2.0));
  EXPECT_NE(JsonValue(2), JsonValue(2.5));
  EXPECT_NE(JsonValue(int64_t{9007199254740993}), JsonValue(9007199254740992.0));
  EXPECT_EQ(JsonValue(std::nan("")), JsonValue());  // both are written as null
  EXPECT_NE(JsonValue("2"), JsonValue(2));
  EXPECT_NE(JsonValue(true), JsonValue(1));
  JsonValue a = JsonValue::Object();
  a.Set("x", 1);
  JsonValue b = JsonValue::Object();
  b.Set("x", 1.0);
  EXPECT_EQ(a, b);
  b.Set("y", 1);
  EXPECT_NE(a, b);
}

TEST(JsonValue, RoundTripsThroughTheReaderParser) {
  JsonValue o = JsonValue::Object();
  o.Set("steps", 50);
  o.Set("amp", "off");
  o.Set("lr", 0.001);
  o.Set("esc", std::string("tab\tnul\0end", 11));
  o.Set("utf8", "\xe2\x82\xac");
  JsonValue inner = JsonValue::Array();
  inner.Push(JsonValue::Object()).Set("deep", JsonValue::Array());
  inner.Push(-1.5e-300);
  inner.Push(false);
  inner.Push(JsonValue());
  o.Set("list", inner);
  const std::string json = o.ToJson();
  const JsonValue back = Reparse(json);
  EXPECT_EQ(back, o);
  EXPECT_EQ(back.ToJson(), json);  // the same bytes for equal values
}

TEST(JsonValue, LargeIntegralDoublesStayParseable) {
  // Shortest spelling of these is a plain integer past uint64; it must not be written so.
  for (double d : {18446744073709551616.0, 1.2345678901234567e+20, -1.2345678901234567e+20,
                   9223372036854775808.0, 1e300}) {
    const std::string json = "[" + JsonValue(d).ToJson() + "]";
    const JsonValue back = Reparse(json);
    ASSERT_EQ(back.elements().size(), 1u) << json;
    EXPECT_EQ(back.elements()[0].as_double(), d) << json;
    std::string line;
    JsonLine(&line).Field("v", d).Finish();
    EXPECT_EQ(Reparse(line).Find("v")->as_double(), d) << line;
  }
}

TEST(JsonValue, DoublesRoundTripBitForBit) {
  std::mt19937_64 rng(42);
  for (int i = 0; i < 2000; ++i) {
    uint64_t bits = rng();
    double d;
    std::memcpy(&d, &bits, sizeof d);
    if (!std::isfinite(d)) continue;
    const JsonValue back = Reparse("[" + JsonValue(d).ToJson() + "]");
    ASSERT_EQ(back.elements().size(), 1u);
    const double r = back.elements()[0].as_double();
    EXPECT_EQ(std::memcmp(&r, &d, sizeof d), 0) << JsonValue(d).ToJson();
  }
}

// Copies share their payload (a run's ranks hold one config): a write to either copy, at
// any depth, leaves the other as it was.
TEST(JsonValue, CopiesAreIndependentValues) {
  JsonValue inner = JsonValue::Array();
  inner.Push(1);
  JsonValue a = JsonValue::Object();
  a.Set("name", "resnet");
  a.Set("list", inner);
  JsonValue b = a;
  b.Set("name", "vit");
  b.Set("extra", true);
  inner.Push(2);
  JsonValue c = b;
  c.Set("list", inner);
  EXPECT_EQ(a.ToJson(), R"({"name":"resnet","list":[1]})");
  EXPECT_EQ(b.ToJson(), R"({"name":"vit","list":[1],"extra":true})");
  EXPECT_EQ(c.ToJson(), R"({"name":"vit","list":[1,2],"extra":true})");
  EXPECT_EQ(inner.ToJson(), "[1,2]");
  EXPECT_EQ(JsonValue("").ToJson(), R"("")");
  EXPECT_EQ(JsonValue(std::string()), JsonValue(""));
  EXPECT_NE(JsonValue(""), JsonValue());
  EXPECT_LE(sizeof(JsonValue), 32u);
}

}  // namespace
}  // namespace dsdiag::trace
