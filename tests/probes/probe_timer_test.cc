// ProbeTimer: the probes' own time, summed by their session and written into the trace.
#include "probes/probe_timer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <thread>

#include "probes/session.h"
#include "trace/record_types.h"
#include "trace/trace_reader.h"

namespace dsdiag::probes {
namespace {

namespace fs = std::filesystem;

class ProbeTimerTest : public ::testing::Test {
 protected:
  std::unique_ptr<Session> Start(Mode mode) {
    SessionConfig c;
    c.mode = mode;
    c.run_dir = dir_;
    c.header.run_id = "probe-timer-test";
    c.header.world_size = 1;
    std::string error;
    auto s = Session::Start(c, &error);
    EXPECT_TRUE(s) << error;
    return s;
  }
  void TearDown() override { fs::remove_all(dir_); }

  const std::string dir_ =
      (fs::temp_directory_path() / ("dsdiag-probe-timer-" + std::to_string(getpid()))).string();
};

TEST_F(ProbeTimerTest, TheOutermostTimerOnAThreadCountsNestedOnesAddNothing) {
  auto s = Start(Mode::kLight);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->probe_ns(), 0);
  {
    ProbeTimer outer(s.get());
    usleep(1000);
    {
      ProbeTimer inner(s.get());  // a probe calling another probe
      usleep(1000);
    }
    EXPECT_EQ(s->probe_ns(), 0) << "the nested timer counted on its own";
  }
  const int64_t after_outer = s->probe_ns();
  EXPECT_GE(after_outer, 2000000);  // both sleeps, once
  // Another thread's probe calls are counted too (a loader worker writing its records).
  std::thread worker([&] {
    ProbeTimer t(s.get());
    usleep(1000);
  });
  worker.join();
  EXPECT_GE(s->probe_ns(), after_outer + 1000000);
}

TEST_F(ProbeTimerTest, OffCountsNothing) {
  auto s = Start(Mode::kOff);
  ASSERT_TRUE(s);
  {
    ProbeTimer t(s.get());
    usleep(1000);
  }
  ProbeTimer null_session(nullptr);
  EXPECT_EQ(s->probe_ns(), 0);
}

// Each step record says how long the probes took since the previous one; the end record
// says the session's total, which holds them all.
TEST_F(ProbeTimerTest, StepRecordsCarryTheProbeTimeSinceThePreviousOne) {
  auto s = Start(Mode::kLight);
  ASSERT_TRUE(s);
  for (int step = 0; step < 3; ++step) {
    s->BeginStep(step, 0);
    { PhaseScope p(s.get(), Phase::kForward); }
    if (step == 1) {
      ProbeTimer t(s.get());  // a probe that takes 2 ms in step 1
      usleep(2000);
    }
    s->EndStep({});
  }
  s->End("ok", 0);
  const int64_t total = s->probe_ns();
  s.reset();

  std::string error;
  auto reader = trace::TraceReader::Open(dir_ + "/rank-00000.jsonl", &error);
  ASSERT_TRUE(reader) << error;
  trace::Record r;
  int64_t sum = 0, end_total = -1;
  std::vector<int64_t> per_step;
  while (reader->Next(&r)) {
    if (r.type_id() == trace::rec_id::kStep) {
      ASSERT_TRUE(r.Int("probe_ns")) << r.raw_line();
      per_step.push_back(*r.Int("probe_ns"));
      sum += per_step.back();
    } else if (r.type_id() == trace::rec_id::kEnd) {
      end_total = r.Int("probe_ns").value_or(-1);
    }
  }
  ASSERT_EQ(per_step.size(), 3u);
  for (int64_t ns : per_step) EXPECT_GT(ns, 0);  // BeginStep and the phase at least
  EXPECT_GE(per_step[1], 2000000);
  // The last EndStep's own time (and End's) comes after the last step record.
  EXPECT_GT(end_total, sum);
  EXPECT_LE(end_total, total);
}

}  // namespace
}  // namespace dsdiag::probes
