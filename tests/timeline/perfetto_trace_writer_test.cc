// PerfettoTraceWriter's deferred SLICE_ENDs: those spilled to the temporary file (a budget of
// a few entries, read back in pieces that cut entries in two) come out byte for byte as those
// kept in memory, and the file is gone once the writer is.
#include "timeline/perfetto_trace_writer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <string>

#include "tests/timeline/timeline_test_util.h"

namespace dsdiag::timeline {
namespace {

constexpr int kEnds = 500;

std::string WriteEnds(const std::string& scratch, size_t budget) {
  CollectiveIndex collectives;
  for (int seq = 0; seq < kEnds; seq += 2) {  // every other one has its wait
    collectives.Add(/*pg=*/0, seq, /*enter=*/seq * 1000 + 400, /*rank=*/1);
    collectives.Add(0, seq, seq * 1000, /*rank=*/0);
  }
  std::ostringstream out;
  PerfettoTraceWriter writer(&out, scratch, budget);
  for (int seq = 0; seq < kEnds; ++seq) {
    PerfettoTraceWriter::DeferredEnd end;
    end.sequence = PerfettoTraceWriter::RankSequence(seq % 3);
    end.track = (uint64_t{1} << 20) + static_cast<uint64_t>(seq % 7);
    end.ts_ns = seq * int64_t{1000};
    end.dur_ns = 900 + seq;
    end.pg = 0;
    end.seq = seq;
    writer.DeferEnd(end);
  }
  writer.WriteDeferred(collectives);
  writer.Finish();
  EXPECT_EQ(writer.packets(), kEnds);
  return out.str();
}

TEST(PerfettoTraceWriterTest, SpilledEndsComeOutAsThoseKeptInMemory) {
  testing::TempDir scratch;
  const std::string in_memory = WriteEnds(scratch.path(), size_t{1} << 20);
  ASSERT_FALSE(in_memory.empty());
  for (const size_t budget : {size_t{1}, size_t{100}, size_t{4096}}) {
    EXPECT_EQ(WriteEnds(scratch.path(), budget), in_memory) << "budget " << budget;
  }
  EXPECT_TRUE(std::filesystem::is_empty(scratch.path())) << "a temporary file was left behind";
}

TEST(PerfettoTraceWriterTest, AScratchDirThatCannotHoldTheFileIsAnError) {
  std::ostringstream out;
  PerfettoTraceWriter writer(&out, "/no/such/dir", /*deferred_budget=*/1);
  PerfettoTraceWriter::DeferredEnd end;
  end.sequence = 2;
  EXPECT_THROW(writer.DeferEnd(end), std::runtime_error);
}

}  // namespace
}  // namespace dsdiag::timeline
