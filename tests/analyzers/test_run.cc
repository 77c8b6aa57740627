#include "tests/analyzers/test_run.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "tests/support/rank_trace.h"
#include "tests/support/step_trace.h"
#include "trace/clock.h"
#include "trace/record_types.h"
#include "trace/records/phase_record.h"
#include "trace/records/step_record.h"
#include "trace/run_files.h"

namespace dsdiag::analyzers::testing {

namespace fs = std::filesystem;

TestRun::TestRun() {
  std::string pattern = (fs::temp_directory_path() / "dsdiag-analyzers-XXXXXX").string();
  if (!mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
  dir_ = pattern;
}

TestRun::~TestRun() {
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

std::string TestRun::Path(std::string_view file_name) const {
  return (fs::path(dir_) / std::string(file_name)).string();
}

trace::TraceHeader TestRun::Header(int rank, int world_size) {
  test_support::HeaderFacts facts;
  facts.rank = rank;
  facts.world_size = world_size;
  trace::TraceHeader h = test_support::TestHeader(facts);
  h.clock = trace::ClockReference{};  // none measured: each rank on its own clock
  h.versions["libtorch"] = "1.13.1";
  h.env = {{"OMP_NUM_THREADS", "1"}, {"LOCAL_RANK", std::to_string(rank)}};
  h.config.Set("steps", 3);
  h.config.Set("batch_size", 8);
  h.config.Set("amp", "off");
  return h;
}

std::unique_ptr<trace::TraceWriter> TestRun::Open(const trace::TraceHeader& header,
                                                  std::string file_name) {
  if (file_name.empty()) file_name = trace::RankTraceFileName(header.rank);
  trace::TraceWriter::Options options;
  options.flush_interval_ms = 0;
  std::string error;
  auto w = trace::TraceWriter::Open(Path(file_name), options, &error);
  if (!w) throw std::runtime_error(error);
  w->WriteHeader(header);
  return w;
}

void TestRun::WriteSteps(trace::TraceWriter* w, int from, int to) {
  namespace phase = trace::phase;
  static constexpr std::string_view kPhases[] = {phase::kData, phase::kForward, phase::kBackward,
                                                 phase::kSync, phase::kOptimizer};
  // Written now, as the probes would: the times planned below are the phases' order only.
  const test_support::StepTrace::Clock now = [](int64_t) { return trace::MonotonicNs(); };
  for (int s = from; s < to; ++s) {
    test_support::StepTrace step(s, 0);
    for (int i = 0; i < 5; ++i) step.Phase(kPhases[i], i * 1000, 1000);
    step.record().loss = 2.0;
    step.Write(w, now);
  }
  w->SetStep(to);
}

void TestRun::WriteEnd(trace::TraceWriter* w, std::string_view reason, int status,
                       std::string_view detail_key, std::string_view detail) {
  auto r = w->Begin(trace::rec::kEnd);
  r.line().Field("reason", reason).Field("status", status);
  if (!detail_key.empty()) r.line().Field(detail_key, detail);
}

void TestRun::WriteCleanRank(const trace::TraceHeader& header, int steps) {
  auto w = Open(header);
  WriteSteps(w.get(), 0, steps);
  WriteEnd(w.get(), "ok", 0);
}

void TestRun::AppendRaw(std::string_view file_name, std::string_view text) const {
  std::ofstream(Path(file_name), std::ios::app) << text;
}

void TestRun::WriteFile(std::string_view file_name, std::string_view text) const {
  std::ofstream(Path(file_name), std::ios::trunc) << text;
}

}  // namespace dsdiag::analyzers::testing
