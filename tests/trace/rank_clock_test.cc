// trace/rank_clock.h: the one mapping of a rank's ts to rank 0's clock that compare,
// timeline and report share — the header's pair and offset, refinements from `clock`
// records, and the rule that an unmeasured offset does not undo a measured one.
#include "trace/rank_clock.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "tests/trace/test_util.h"
#include "trace/trace_reader.h"

namespace dsdiag::trace {
namespace {

constexpr int64_t kWall0 = 1796026500000000000;

ClockReference Reference() {
  ClockReference ref;
  ref.mono_ns = 5000;
  ref.wall_ns = kWall0 + 700;
  ref.offset_ns = 700;
  ref.offset_err_ns = 10;
  return ref;
}

// The records of a trace holding `lines` after a header.
class Records {
 public:
  explicit Records(const std::vector<std::string>& lines) {
    std::string text = std::string(testing::kHeader) + "\n";
    for (const std::string& l : lines) text += l + "\n";
    testing::WriteFile(dir_ / "rank-00000.jsonl", text);
    std::string error;
    reader_ = TraceReader::Open(dir_ / "rank-00000.jsonl", &error);
    reader_->ReadHeader();
  }
  // The next record after the header.
  const Record& Next() {
    do {
      EXPECT_TRUE(reader_->Next(&record_));
    } while (record_.type_id() == rec_id::kHeader);
    return record_;
  }

 private:
  testing::TempDir dir_;
  std::unique_ptr<TraceReader> reader_;
  Record record_;
};

TEST(RankClockTest, MapsToRankZerosWallClockThroughTheHeadersPairAndOffset) {
  RankClock clock(Reference());
  EXPECT_EQ(clock.ToRank0(5000), kWall0);
  EXPECT_EQ(clock.ToRank0(6000), kWall0 + 1000);
  EXPECT_TRUE(clock.Refine(500, 5));
  EXPECT_EQ(clock.ToRank0(5000), kWall0 + 200);
  EXPECT_EQ(clock.offset_err_ns(), 5);
}

TEST(RankClockTest, RefinesFromClockRecordsButNotFromUnmeasuredOnes) {
  Records records({R"({"type":"clock","ts":10,"step":0,"offset":300,"offset_err":4})",
                   R"({"type":"clock","ts":20,"step":0,"offset":0,"offset_err":-1})",
                   R"({"type":"step_begin","ts":30,"step":0,"epoch":0})"});
  RankClock clock(Reference());
  EXPECT_TRUE(clock.Refine(records.Next()));
  EXPECT_EQ(clock.offset_ns(), 300);
  EXPECT_FALSE(clock.Refine(records.Next()));  // offset_err -1: measured nothing, keeps 300
  EXPECT_EQ(clock.offset_ns(), 300);
  EXPECT_FALSE(clock.Refine(records.Next()));  // not a clock record
  // With nothing measured yet, an unmeasured offset is taken: it is all there is.
  ClockReference unmeasured;
  RankClock fresh(unmeasured);
  EXPECT_TRUE(fresh.Refine(-40, -1));
  EXPECT_EQ(fresh.offset_ns(), -40);
}

TEST(OffsetHistoryTest, MapsATimeWithTheOffsetInForceThenByTheSameRule) {
  Records records({R"({"type":"clock","ts":2000,"step":0,"offset":50,"offset_err":3})",
                   R"({"type":"clock","ts":3000,"step":0,"offset":70,"offset_err":3})",
                   R"({"type":"clock","ts":4000,"step":0,"offset":0,"offset_err":-1})"});
  ClockReference ref;
  ref.mono_ns = 1000;
  ref.wall_ns = 1000000;
  ref.offset_ns = 300;
  ref.offset_err_ns = 20;
  OffsetHistory history(ref);
  for (int i = 0; i < 3; ++i) history.Add(records.Next());
  EXPECT_EQ(history.ToRank0(1999), 1999 - 1000 + 1000000 - 300);
  EXPECT_EQ(history.ToRank0(2500), 2500 - 1000 + 1000000 - 50);
  EXPECT_EQ(history.ToRank0(3000), 3000 - 1000 + 1000000 - 70);
  EXPECT_EQ(history.ToRank0(5000), 5000 - 1000 + 1000000 - 70);  // -1 ignored
}

}  // namespace
}  // namespace dsdiag::trace
