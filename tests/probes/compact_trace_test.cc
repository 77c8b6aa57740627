// Light mode writes trace format v2's compact records (probes/records/collective_steps.h,
// fingerprint_repeats.h); read back, they must say what full mode's v1-shaped records say:
// the same collectives (descriptor, sequence, step, order), the same fingerprints and the
// same step totals — with a step that adds an op, an op completed on another thread, a
// failed one, a pre-step fingerprint that differs, and an error in the middle of a step.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "probes/collective_probe.h"
#include "probes/records/gradient_records.h"
#include "probes/session.h"
#include "tests/support/files.h"
#include "tests/support/temp_dir.h"
#include "trace/trace_reader.h"

namespace dsdiag::probes {
namespace {

void Op(CollectiveProbe* probe, const char* tag, int64_t bytes) {
  CollectiveScope scope(probe, 0, "allreduce", "f32", bytes / 4, bytes, tag);
  scope.Started();
}

void FailedOp(CollectiveProbe* probe) {
  try {
    CollectiveScope scope(probe, 0, "allreduce", "f32", 1, 4, "doomed");
    throw std::runtime_error("peer gone");
  } catch (const std::runtime_error&) {
  }
}

// The loop both modes run.
void RunLoop(Session* s) {
  CollectiveProbe probe(s, nullptr);
  for (int step = 0; step < 8; ++step) {
    s->BeginStep(step, 0);
    Op(&probe, "b0", 400);
    Op(&probe, "b1", 800);
    if (step == 3) Op(&probe, "health", 4);  // one step with an extra op
    if (step == 5) std::thread([&] { Op(&probe, "callback", 16); }).join();
    if (step == 6) FailedOp(&probe);
    const std::vector<uint64_t> synced = {0x1111u + static_cast<uint64_t>(step), 0x2222u};
    records::WriteFingerprints(s, "grad", "after-sync", false, synced);
    std::vector<uint64_t> used = synced;
    if (step == 2) used[1] = 0x3333u;  // changed after the sync
    records::WriteFingerprints(s, "grad", "pre-step", false, used);
    if (step % 3 == 1) records::WriteFingerprints(s, "param", "pre-step", false, {0x77u});
    if (step % 3 == 0) records::WriteFingerprints(s, "param", "periodic", false, {0x77u});
    // A step of several optimizers writes its parameters' pre-step hashes at its end, just
    // before new periodic ones: the left-out pre-step still reads back as the older hash.
    if (step == 7) records::WriteFingerprints(s, "param", "periodic", false, {0x78u});
    s->EndStep({.loss = 1.0, .global_loss = NAN, .lr = 0.1, .samples = 4});
  }
  s->BeginStep(8, 0);
  Op(&probe, "b0", 400);
  records::WriteFingerprints(s, "grad", "after-sync", false, {0x99u});
  records::WriteFingerprints(s, "grad", "pre-step", false, {0x99u});
  s->RecordError("test", "failed mid-step");  // what is held goes out first
  s->End("error", 1);
}

struct Seen {
  std::vector<std::string> colls;  // in file order
  std::vector<std::string> fps;    // sorted: the pre-step ones come back at the step's end
  std::vector<std::string> totals;
  int phases = 0;
};

Seen RunAndRead(Mode mode, std::string* text) {
  test_support::TempDir dir("compact");
  SessionConfig config;
  config.mode = mode;
  config.run_dir = dir.path();
  config.header.run_id = "compact-test";
  config.header.world_size = 1;
  std::string error;
  {
    auto s = Session::Start(config, &error);
    EXPECT_TRUE(s) << error;
    if (s) RunLoop(s.get());
  }
  const std::string path = dir.path() + "/rank-00000.jsonl";
  *text = test_support::ReadFile(path);
  auto reader = trace::TraceReader::Open(path, &error);
  Seen seen;
  trace::Record r;
  while (reader->Next(&r)) {
    const std::string step = std::to_string(r.step());
    if (r.type_id() == trace::rec_id::kCollective) {
      seen.colls.push_back(step + " " + std::to_string(*r.Int("seq")) + " " +
                           std::string(*r.Str("op")) + " " + std::string(*r.Str("tag")) + " " +
                           std::to_string(*r.Int("bytes")) + (r.Has("failed") ? " failed" : "") +
                           " site " + std::to_string(r.Int("site").value_or(0)));
    } else if (r.type_id() == trace::rec_id::kFingerprint) {
      std::vector<uint64_t> h;
      r.HexArray("h", &h);
      std::string hashes;
      for (uint64_t v : h) hashes += " " + std::to_string(v);
      seen.fps.push_back(step + " " + std::string(*r.Str("what")) + " " +
                         std::string(*r.Str("why")) + " " + std::string(*r.Str("gran")) + hashes);
    } else if (r.type_id() == trace::rec_id::kStep) {
      const auto coll = r.Value("coll");
      seen.totals.push_back(
          step +
          (coll ? " " + coll->Find("n")->ToJson() + " " + coll->Find("bytes")->ToJson() : ""));
    } else if (r.type_id() == trace::rec_id::kPhase) {
      ++seen.phases;
    }
  }
  EXPECT_EQ(reader->issue_count(), 0) << reader->issues()[0].ToString();
  std::sort(seen.fps.begin(), seen.fps.end());
  return seen;
}

TEST(CompactTrace, LightModeReadsBackAsFullModeWritesIt) {
  std::string light_text, full_text;
  const Seen light = RunAndRead(Mode::kLight, &light_text);
  const Seen full = RunAndRead(Mode::kFull, &full_text);
  EXPECT_EQ(light.colls, full.colls);
  EXPECT_EQ(light.fps, full.fps);
  EXPECT_EQ(light.totals, full.totals);
  EXPECT_EQ(full.colls.size(), 20u);  // 8 steps of 2, health, callback, failed, step 8s one
  // What light mode saved: the compact records are there, the full ones mostly not.
  EXPECT_NE(light_text.find("\"type\":\"colls\""), std::string::npos);
  EXPECT_NE(light_text.find("\"pre_step_fp\":\"grad\""), std::string::npos);
  EXPECT_NE(light_text.find("\"pre_step_fp\":\"grad,param\""), std::string::npos);
  EXPECT_NE(light_text.find("\"same\":\"after-sync\""), std::string::npos);  // step 8's error
  EXPECT_LT(light_text.size(), full_text.size());
  EXPECT_EQ(full_text.find("\"type\":\"colls\""), std::string::npos);
}

}  // namespace
}  // namespace dsdiag::probes
