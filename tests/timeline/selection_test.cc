// The small parts of the timeline: --steps/--ranks parsing, the collective index, the time
// formatting of the Chrome trace writer.
#include "timeline/selection.h"

#include <gtest/gtest.h>

#include <string>

#include "timeline/chrome_trace_writer.h"
#include "timeline/collective_index.h"
#include "trace/rank_clock.h"

namespace dsdiag::timeline {
namespace {

TEST(StepRangeTest, ParsesEitherSideOptional) {
  std::string error;
  auto both = ParseStepRange("10:20", &error);
  ASSERT_TRUE(both) << error;
  EXPECT_EQ(both->first, 10);
  EXPECT_EQ(both->last, 20);
  EXPECT_TRUE(both->Contains(10));
  EXPECT_TRUE(both->Contains(20));
  EXPECT_FALSE(both->Contains(9));
  EXPECT_FALSE(both->Contains(21));

  auto from = ParseStepRange("5:", &error);
  ASSERT_TRUE(from);
  EXPECT_EQ(from->first, 5);
  EXPECT_FALSE(from->last);
  EXPECT_TRUE(from->Contains(1000000));

  auto to = ParseStepRange(":3", &error);
  ASSERT_TRUE(to);
  EXPECT_FALSE(to->first);
  EXPECT_TRUE(to->Contains(0));
  EXPECT_FALSE(to->Contains(4));

  auto one = ParseStepRange("7", &error);
  ASSERT_TRUE(one);
  EXPECT_EQ(one->first, 7);
  EXPECT_EQ(one->last, 7);

  auto all = ParseStepRange(":", &error);
  ASSERT_TRUE(all);
  EXPECT_TRUE(all->unbounded());
}

TEST(StepRangeTest, RejectsMalformedAndBackwards) {
  for (const char* bad : {"", "a:b", "1:2:3", "-1:4", "1.5:3", "3:1", "x"}) {
    std::string error;
    EXPECT_FALSE(ParseStepRange(bad, &error)) << bad;
    EXPECT_NE(error.find("--steps"), std::string::npos) << bad << ": " << error;
  }
}

TEST(RankSetTest, ParsesListsAndRangesWithoutExpanding) {
  std::string error;
  auto s = RankSet::Parse("0-3,7", &error);
  ASSERT_TRUE(s) << error;
  for (int r : {0, 1, 2, 3, 7}) EXPECT_TRUE(s->Contains(r)) << r;
  for (int r : {4, 5, 6, 8, -1}) EXPECT_FALSE(s->Contains(r)) << r;
  EXPECT_EQ(s->ToString(), "0-3,7");

  auto merged = RankSet::Parse("5,0-3,2-4", &error);
  ASSERT_TRUE(merged);
  EXPECT_EQ(merged->ToString(), "0-5");

  auto huge = RankSet::Parse("0-2000000000", &error);
  ASSERT_TRUE(huge);
  EXPECT_TRUE(huge->Contains(1999999999));

  EXPECT_TRUE(RankSet::All().Contains(12345));
  EXPECT_FALSE(RankSet().Contains(0));
}

TEST(RankSetTest, RejectsMalformed) {
  for (const char* bad : {"", "a", "1,", "3-1", "-2", "1-", "1;2", "0-3,,5"}) {
    std::string error;
    EXPECT_FALSE(RankSet::Parse(bad, &error)) << bad;
    EXPECT_NE(error.find("--ranks"), std::string::npos) << bad << ": " << error;
  }
}

TEST(CollectiveIndexTest, KeepsTheLastEnterAndWho) {
  CollectiveIndex index;
  index.Add(0, 5, 100, 0);
  index.Add(0, 5, 300, 2);
  index.Add(0, 5, 200, 1);
  index.Add(1, 5, 50, 3);
  const CollectiveIndex::Entry* e = index.Find(0, 5);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->last_enter, 300);
  EXPECT_EQ(e->last_rank, 2);
  EXPECT_EQ(e->ranks, 3);
  ASSERT_NE(index.Find(1, 5), nullptr);
  EXPECT_EQ(index.Find(1, 5)->last_rank, 3);
  EXPECT_EQ(index.Find(0, 6), nullptr);
  EXPECT_EQ(index.Find(2, 5), nullptr);
  EXPECT_EQ(index.size(), 2);
}

TEST(CollectiveIndexTest, FarAndLowSeqsStaySeparateAndMoveInWhenReached) {
  CollectiveIndex index;
  index.Add(0, 1000, 1, 0);                                                // base
  index.Add(0, 1000 + 100000, 2, 0);                                       // far beyond: parked
  index.Add(0, 10, 3, 0);                                                  // below base: parked
  for (int64_t s = 1000; s <= 1000 + 100000; ++s) index.Add(0, s, 10, 1);  // grows over it
  const auto* far = index.Find(0, 1000 + 100000);
  ASSERT_NE(far, nullptr);
  EXPECT_EQ(far->ranks, 2);  // one slot, both adds
  EXPECT_EQ(far->last_enter, 10);
  ASSERT_NE(index.Find(0, 10), nullptr);
  EXPECT_EQ(index.Find(0, 10)->last_enter, 3);
  EXPECT_EQ(index.Find(0, 1000)->ranks, 2);
  EXPECT_EQ(index.size(), 100002);
}

TEST(ChromeTraceWriterTest, MicrosAreExactDecimals) {
  auto micros = [](int64_t ns) {
    std::string s;
    ChromeTraceWriter::AppendMicros(&s, ns);
    return s;
  };
  EXPECT_EQ(micros(0), "0");
  EXPECT_EQ(micros(2000), "2");
  EXPECT_EQ(micros(1234567), "1234.567");
  EXPECT_EQ(micros(1500), "1.5");
  EXPECT_EQ(micros(1050), "1.05");
  EXPECT_EQ(micros(-5), "-0.005");
  EXPECT_EQ(micros(INT64_MIN), "-9223372036854775.808");
}

TEST(ChromeTraceWriterTest, TimesSnapToAnEighthOfAMicrosecond) {
  EXPECT_EQ(ChromeTraceWriter::ToGrid(0), 0);
  EXPECT_EQ(ChromeTraceWriter::ToGrid(62), 0);
  EXPECT_EQ(ChromeTraceWriter::ToGrid(63), 125);
  EXPECT_EQ(ChromeTraceWriter::ToGrid(1234560), 1234500);
  EXPECT_EQ(ChromeTraceWriter::ToGrid(1234567), 1234625);
  EXPECT_EQ(ChromeTraceWriter::ToGrid(1234600), 1234625);
  EXPECT_EQ(ChromeTraceWriter::ToGrid(-62), 0);
  EXPECT_EQ(ChromeTraceWriter::ToGrid(-63), -125);
  EXPECT_EQ(ChromeTraceWriter::ToGrid(-1000), -1000);
}

}  // namespace
}  // namespace dsdiag::timeline
