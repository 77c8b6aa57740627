// Session and PhaseScope: the records a training loop's skeleton produces.
#include "probes/session.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "trace/record_types.h"
#include "trace/records/step_record.h"
#include "trace/trace_reader.h"

namespace dsdiag::probes {
namespace {

namespace fs = std::filesystem;

std::string TempRunDir(const char* name) {
  fs::path dir = fs::temp_directory_path() /
                 ("dsdiag-session-" + std::string(name) + "-" + std::to_string(getpid()));
  fs::remove_all(dir);
  return dir.string();
}

SessionConfig Config(const std::string& dir, Mode mode) {
  SessionConfig c;
  c.mode = mode;
  c.run_dir = dir + "/nested";
  c.header.run_id = "session-test";
  c.header.rank = 3;
  c.header.world_size = 4;
  c.header.config.Set("steps", 2);
  return c;
}

std::vector<std::string> RecordTypes(const std::string& path) {
  std::string error;
  auto reader = trace::TraceReader::Open(path, &error);
  EXPECT_TRUE(reader) << error;
  std::vector<std::string> types;
  trace::Record r;
  while (reader->Next(&r)) types.emplace_back(r.type());
  EXPECT_EQ(reader->issue_count(), 0);
  return types;
}

TEST(SessionTest, StepsPhasesAndEndBecomeRecords) {
  const std::string dir = TempRunDir("steps");
  std::string error;
  auto s = Session::Start(Config(dir, Mode::kLight), &error);
  ASSERT_TRUE(s) << error;
  ASSERT_TRUE(s->on());
  for (int step = 0; step < 2; ++step) {
    s->BeginStep(step, 0);
    { PhaseScope p(s.get(), Phase::kForward); }
    {
      PhaseScope p(s.get(), Phase::kBackward);
      EXPECT_EQ(s->current_phase(), Phase::kBackward);
    }
    EXPECT_EQ(s->current_phase(), Phase::kNone);
    s->EndStep({.loss = 1.5, .global_loss = NAN, .lr = 0.1, .samples = 8});
  }
  s->End("ok", 0);
  s->End("error", 1);  // second call ignored
  s.reset();

  const std::string path = dir + "/nested/rank-00003.jsonl";
  // Light mode (trace v2): the step record's phase totals, no record per phase.
  std::vector<std::string> expected = {"step_begin", "step", "step_begin", "step", "end"};
  EXPECT_EQ(RecordTypes(path), expected);

  auto reader = trace::TraceReader::Open(path, &error);
  ASSERT_TRUE(reader->ReadHeader());
  EXPECT_EQ(reader->header()->rank, 3);
  EXPECT_EQ(reader->header()->run_id, "session-test");
  EXPECT_EQ(reader->header()->versions.at("dsdiag"), DSDIAG_VERSION);
  trace::Record r;
  int64_t last_step = -1;
  while (reader->Next(&r)) {
    if (r.type() == trace::rec::kStep) {
      EXPECT_EQ(r.Double("loss"), 1.5);
      EXPECT_EQ(r.Int("samples"), 8);
      EXPECT_FALSE(r.Has("gloss"));  // NaN means "not known": left out
      auto phases = r.Value("phases");
      ASSERT_TRUE(phases);
      EXPECT_TRUE(phases->Find("forward"));
      EXPECT_TRUE(phases->Find("backward"));
      EXPECT_FALSE(phases->Find("sync"));
      last_step = r.step();
    }
    if (r.type() == trace::rec::kEnd) {
      EXPECT_EQ(r.Str("reason"), "ok");
    }
  }
  EXPECT_EQ(last_step, 1);
  fs::remove_all(dir);
}

// A loop that measures device time hands an earlier step's times to EndStep: the step record
// carries them as `dev`, with the step they are of; a step without them has no `dev`.
TEST(SessionTest, DeviceTimesOfAnEarlierStepRideInTheStepRecord) {
  const std::string dir = TempRunDir("dev");
  std::string error;
  auto s = Session::Start(Config(dir, Mode::kLight), &error);
  ASSERT_TRUE(s) << error;
  const trace::records::PhaseTime times[] = {{"forward", 900}, {"backward", 0}, {"coll", 700}};
  for (int step = 0; step < 2; ++step) {
    s->BeginStep(step, 0);
    StepSummary summary;
    if (step == 1) summary.device = {0, times, 3};
    s->EndStep(summary);
  }
  s->End("ok", 0);
  s.reset();
  auto reader = trace::TraceReader::Open(dir + "/nested/rank-00003.jsonl", &error);
  ASSERT_TRUE(reader && reader->ReadHeader()) << error;
  using Named = std::vector<std::pair<std::string, double>>;
  std::vector<Named> devs;
  trace::Record r;
  while (reader->Next(&r)) {
    if (r.type() != trace::rec::kStep) continue;
    std::vector<trace::Record::NumberMember> dev;
    EXPECT_EQ(trace::records::StepView(r).dev(&dev), r.step() == 1);
    Named named;
    for (const auto& m : dev) named.emplace_back(std::string(m.name), m.value);
    devs.push_back(named);
  }
  ASSERT_EQ(devs.size(), 2u);
  // step, forward, coll: a zero is left out.
  EXPECT_EQ(devs[1], (Named{{"step", 0}, {"forward", 900}, {"coll", 700}}));
  fs::remove_all(dir);
}

TEST(SessionTest, OffWritesNothing) {
  const std::string dir = TempRunDir("off");
  std::string error;
  auto s = Session::Start(Config(dir, Mode::kOff), &error);
  ASSERT_TRUE(s);
  EXPECT_FALSE(s->on());
  s->BeginStep(0, 0);
  { PhaseScope p(s.get(), Phase::kForward); }
  s->EndStep({});
  s->End("ok", 0);
  EXPECT_FALSE(fs::exists(dir));
}

TEST(SessionTest, DestroyedWithoutEndSaysSo) {
  const std::string dir = TempRunDir("destroyed");
  std::string error;
  auto s = Session::Start(Config(dir, Mode::kFull), &error);
  ASSERT_TRUE(s);
  s->RecordError("test", "boom");
  s.reset();
  auto types = RecordTypes(dir + "/nested/rank-00003.jsonl");
  ASSERT_EQ(types.size(), 2u);
  EXPECT_EQ(types[0], "error");
  EXPECT_EQ(types[1], "end");
  fs::remove_all(dir);
}

TEST(SessionTest, UnwritableRunDirIsAnError) {
  std::string error;
  SessionConfig c = Config("/proc/definitely-not-writable", Mode::kLight);
  auto s = Session::Start(c, &error);
  EXPECT_FALSE(s);
  EXPECT_NE(error.find("/proc/definitely-not-writable"), std::string::npos) << error;
}

}  // namespace
}  // namespace dsdiag::probes
