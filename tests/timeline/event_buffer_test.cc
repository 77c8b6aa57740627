// The event writer's formatting: an event's args read as trace::JsonLine writes the same
// values, the buffer keeps its bytes as it grows, and an event written through a track's
// head (event_spool.h) replays to the bytes of the same event written in full.
#include "timeline/event_buffer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <sstream>
#include <string>

#include "timeline/chrome_trace_writer.h"
#include "timeline/collective_index.h"
#include "timeline/event_spool.h"
#include "trace/json_line.h"
#include "trace/json_value.h"

namespace dsdiag::timeline {
namespace {

// One args object written by EventArgs and by JsonLine, member by member.
class BothWays {
 public:
  BothWays() : args_(&buffer_), line_(&expected_) {}
  template <typename T>
  BothWays& Field(std::string_view key, T v) {
    args_.Field(key, v);
    line_.Field(key, v);
    return *this;
  }
  std::string got() const { return "{" + std::string(buffer_.view()) + "}\n"; }
  std::string expected() {
    line_.Finish();
    return expected_;
  }

 private:
  EventBuffer buffer_;
  EventArgs args_;
  std::string expected_;
  trace::JsonLine line_;
};

TEST(EventArgsTest, SpellsEveryValueAsJsonLine) {
  BothWays both;
  const double doubles[] = {0.0,
                            -0.0,
                            1.5,
                            0.1,
                            1e-7,
                            2.5e-300,
                            1e300,
                            9.3e18,
                            -9.3e18,
                            static_cast<double>(2.3125f),
                            static_cast<double>(4.299058f),
                            std::nan(""),
                            std::numeric_limits<double>::infinity(),
                            std::numeric_limits<double>::denorm_min(),
                            -std::numeric_limits<double>::max()};
  for (double d : doubles) both.Field("d", d);
  for (int64_t i : {int64_t{0}, int64_t{-1}, std::numeric_limits<int64_t>::min(),
                    std::numeric_limits<int64_t>::max()})
    both.Field("i", i);
  both.Field("n", 7);
  both.Field("u", std::numeric_limits<uint64_t>::max());
  both.Field("b", true).Field("b", false);
  for (std::string_view s :
       {std::string_view(""), std::string_view("allreduce"), std::string_view("a\"b\\c\nd\re\tf"),
        std::string_view("\x01\x1f"), std::string_view("caf\xc3\xa9 \xe2\x9c\x93")})
    both.Field("s", s);
  EXPECT_EQ(both.got(), both.expected());
}

// PutMillis writes the number PutDouble(ns / 1e6) writes, whatever the spelling.
TEST(EventBufferTest, MillisAreTheDoubleOfNsOverAMillion) {
  auto text = [](auto put) {
    char buf[kMaxDoubleChars];
    return std::string(buf, put(buf));
  };
  uint64_t x = 88172645463325252;  // xorshift: ns of every size below 10^15 and past it
  for (int i = 0; i < 100000; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    const int64_t ns = static_cast<int64_t>(x >> (i % 60));
    for (const int64_t v : {ns, -ns, ns / 1000 * 1000}) {
      const std::string millis = text([v](char* p) { return PutMillis(p, v); });
      const double expected = static_cast<double>(v) / 1e6;
      ASSERT_EQ(std::strtod(millis.c_str(), nullptr), expected) << v << " -> " << millis;
      if (std::fabs(expected) >= 1e-3 && std::fabs(expected) < 1e4) {
        EXPECT_EQ(millis, text([expected](char* p) { return PutDouble(p, expected); }));
      }
    }
  }
  EXPECT_EQ(text([](char* p) { return PutMillis(p, 1234567); }), "1.234567");
  EXPECT_EQ(text([](char* p) { return PutMillis(p, -50); }), "-0.00005");
  EXPECT_EQ(text([](char* p) { return PutMillis(p, 2000000); }), "2");
}

TEST(EventBufferTest, KeepsItsBytesAsItGrows) {
  EventBuffer buffer;
  std::string expected;
  for (int64_t i = 0; i < 100000; ++i) {
    buffer.Int(i * 7919);
    buffer.Append(',');
    expected += std::to_string(i * 7919) + ",";
  }
  EXPECT_EQ(buffer.view(), expected);
  buffer.clear();
  EXPECT_EQ(buffer.size(), 0u);
  buffer.Append("again");
  EXPECT_EQ(buffer.view(), "again");
}

// The same events written by the writer directly, and through a spool with and without
// heads: the same bytes.
TEST(EventSpoolTest, EventsThroughAHeadReplayAsWrittenInFull) {
  const char* tmp = std::getenv("TMPDIR");
  const std::string dir = tmp && *tmp ? tmp : "/tmp";
  const int64_t origin = 1000000;
  std::ostringstream direct_out;
  {
    ChromeTraceWriter w(&direct_out);
    for (int64_t i = 0; i < 200; ++i) {
      auto e = w.Complete("forward \"fast\"", "phase", 3, 0, origin + i * 1001 - origin, 777);
      e.Args().Field("step", i);
      e.EndArgs();
    }
    w.Counter("loss", 3, 5000, 2.3125);
    w.Finish(trace::JsonValue::Object());
  }
  std::string replayed[2];
  for (int with_heads = 0; with_heads < 2; ++with_heads) {
    SpoolFile spool(dir, 1, 4096);  // a small budget: chunks go to the file
    RankSpool* rank = spool.rank(0);
    const RankSpool::Head phase = rank->CompleteHead("forward \"fast\"", "phase", 3, 0);
    const RankSpool::Head loss = rank->CounterHead("loss", 3);
    for (int64_t i = 0; i < 200; ++i) {
      auto e = with_heads
                   ? rank->Complete(phase, origin + i * 1001, 777)
                   : rank->Complete("forward \"fast\"", "phase", 3, 0, origin + i * 1001, 777);
      e.Args().Field("step", i);
      e.EndArgs();
    }
    if (with_heads) {
      rank->Counter(loss, origin + 5000, 2.3125);
    } else {
      rank->Counter("loss", 3, origin + 5000, 2.3125);
    }
    std::ostringstream out;
    ChromeTraceWriter w(&out);
    spool.Replay(0, CollectiveIndex(), origin, &w);
    w.Finish(trace::JsonValue::Object());
    replayed[with_heads] = out.str();
  }
  EXPECT_EQ(replayed[0], direct_out.str());
  EXPECT_EQ(replayed[1], direct_out.str());
}

}  // namespace
}  // namespace dsdiag::timeline
