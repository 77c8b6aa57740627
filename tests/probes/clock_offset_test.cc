// MeasureClockOffset: ranks on threads, each with its own wall clock shifted by a known
// amount, agree with rank 0 within the error the measurement states.
#include "probes/clock_offset.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <thread>
#include <vector>

#include "tests/support/memory_store.h"
#include "trace/clock.h"

namespace dsdiag::probes {
namespace {

std::vector<ClockOffset> MeasureOnThreads(test_support::MemoryStore& store,
                                          const std::vector<int64_t>& skews) {
  const int world = static_cast<int>(skews.size());
  std::vector<ClockOffset> offsets(world);
  std::vector<std::thread> ranks;
  for (int rank = 0; rank < world; ++rank) {
    ranks.emplace_back([&, rank] {
      ClockOffsetOptions options;
      options.now = [skew = skews[rank]] { return trace::WallNs() + skew; };
      offsets[rank] = MeasureClockOffset(store, rank, world, "start", options);
    });
  }
  for (std::thread& t : ranks) t.join();
  return offsets;
}

TEST(ClockOffsetTest, EveryRankFindsItsShiftWithinTheStatedError) {
  test_support::MemoryStore store;
  const std::vector<int64_t> skews = {0, 2'000'000'000, -750'000'000, 0};
  const std::vector<ClockOffset> offsets = MeasureOnThreads(store, skews);
  EXPECT_EQ(offsets[0].offset_ns, 0);
  EXPECT_EQ(offsets[0].err_ns, 0);
  for (int rank = 1; rank < 4; ++rank) {
    EXPECT_GE(offsets[rank].err_ns, 0) << "rank " << rank;
    EXPECT_GE(offsets[rank].rtt_ns, 2 * offsets[rank].err_ns) << "rank " << rank;
    // The error bound is what the method promises; a little slack for the clock reads.
    EXPECT_LE(std::llabs(offsets[rank].offset_ns - skews[rank]), offsets[rank].err_ns + 1'000'000)
        << "rank " << rank << " measured " << offsets[rank].offset_ns;
  }
  // Every rank said it was done, so rank 0 could close the store when it returned.
  for (int rank = 1; rank < 4; ++rank) {
    EXPECT_TRUE(store.Has("dsdiag/clock/start/" + std::to_string(rank) + "/done"));
  }
}

TEST(ClockOffsetTest, OneRankIsItsOwnReference) {
  test_support::MemoryStore store;
  const ClockOffset offset = MeasureClockOffset(store, 0, 1, "start");
  EXPECT_EQ(offset.offset_ns, 0);
  EXPECT_EQ(offset.err_ns, 0);
}

TEST(ClockOffsetTest, ARankWithoutRankZeroGetsTheStoresError) {
  test_support::MemoryStore store(std::chrono::milliseconds(100));
  EXPECT_THROW(MeasureClockOffset(store, 1, 2, "start"), std::runtime_error);
}

}  // namespace
}  // namespace dsdiag::probes
