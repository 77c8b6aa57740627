// trace/sample_bitmap.h: the sampler record's exact membership, written by the probes and
// read by the shard-overlap analyzer.
#include "trace/sample_bitmap.h"

#include <gtest/gtest.h>

namespace dsdiag::trace {
namespace {

TEST(SampleBitmapTest, EncodesBitIAsSampleIAndReadsBack) {
  // Samples 0, 2, 9 of 10: bytes 0b00000101, 0b00000010 -> "BQI=".
  EXPECT_EQ(EncodeSampleBitmap({9, 2, 0, 12}, 10), "BQI=");
  EXPECT_EQ(DecodeSampleBitmap("BQI=", 10), (std::vector<uint64_t>{0, 2, 9}));
  EXPECT_EQ(DecodeSampleBitmap("BQI", 10), (std::vector<uint64_t>{0, 2, 9}));  // no padding
  std::vector<uint64_t> every;
  for (uint64_t i = 0; i < 1000; i += 3) every.push_back(i);
  EXPECT_EQ(DecodeSampleBitmap(EncodeSampleBitmap(every, 1000), 1000), every);
}

TEST(SampleBitmapTest, BadTextOrTooFewBitsIsUnusable) {
  EXPECT_FALSE(DecodeSampleBitmap("B*I=", 10));
  EXPECT_FALSE(DecodeSampleBitmap("BQ==", 10));  // one byte for ten samples
}

}  // namespace
}  // namespace dsdiag::trace
