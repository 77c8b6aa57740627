// probes/cuda/ on the machine that runs the test: without a CUDA device (CI, the developers'
// machines) the timer says why it is off and every call is a no-op; with one it measures a
// span on the device and reuses its events. NCCL's version, where the build found NCCL, is
// the headers' and the loaded library's.
#include "probes/cuda/device_timer.h"

#include <gtest/gtest.h>

#include <string>
#ifdef DSDIAG_HAVE_NCCL
#include "probes/cuda/nccl_version.h"
#endif

namespace dsdiag::probes::cuda {
namespace {

TEST(DeviceTimer, OffWithoutADeviceSaysWhyAndRecordsNothing) {
  DeviceTimer timer;
  std::string why;
  if (timer.Init(&why)) GTEST_SKIP() << "this machine has a CUDA device: see OnADevice";
  EXPECT_FALSE(why.empty());
  EXPECT_FALSE(timer.on());
  const int64_t span = timer.Begin(nullptr);
  EXPECT_EQ(span, -1);
  timer.End(span, nullptr);
  EXPECT_TRUE(timer.Resolve().empty());
  EXPECT_EQ(timer.events_created(), 0u);
}

TEST(DeviceTimer, OnADeviceMeasuresSpansAStepLateAndPoolsTheirEvents) {
  DeviceTimer timer;
  std::string why;
  if (!timer.Init(&why)) GTEST_SKIP() << "no CUDA device: " << why;
  std::vector<DeviceSpan> got;
  for (int step = 0; step < 5; ++step) {
    const int64_t span = timer.Begin(nullptr);
    ASSERT_GE(span, 0);
    timer.End(span, nullptr);
    for (const DeviceSpan& s : timer.Resolve()) got.push_back(s);
  }
  // Each span resolves once its end completed: by a later call at the latest.
  for (int tries = 0; tries < 1000 && got.size() < 5; ++tries)
    for (const DeviceSpan& s : timer.Resolve()) got.push_back(s);
  ASSERT_EQ(got.size(), 5u);
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].id, static_cast<int64_t>(i));
    EXPECT_GE(got[i].device_ns, 0);
  }
  EXPECT_LE(timer.events_created(), 4u);  // reused, not created per span
}

#ifdef DSDIAG_HAVE_NCCL
TEST(NcclVersion, TheHeadersAndTheLibraryLoadedSayTheirVersion) {
  const std::string header = NcclHeaderVersion();
  EXPECT_EQ(header.rfind("2.", 0), 0u) << header;
  const std::string library = NcclLibraryVersion();
  EXPECT_EQ(library.rfind("2.", 0), 0u) << library;
}
#endif

}  // namespace
}  // namespace dsdiag::probes::cuda
