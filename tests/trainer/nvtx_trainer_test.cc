// NVTX ranges of a real trainer run: with a recording NVTX tool injected into every rank
// (NVTX_INJECTION64_PATH), the range tree each rank pushed in the "dsdiag" domain must be
// exactly the tree of its trace — every step, the phases nested in it, every collective
// (named "<op> seq <n> <tag>") nested where it ran — so that an Nsight Systems capture shows
// the same names as `dsdiag timeline`.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tests/trainer/trainer_test_util.h"

namespace dsdiag::trainer_test {
namespace {

struct Node {
  int depth;
  std::string name;
  bool operator==(const Node& o) const { return depth == o.depth && name == o.name; }
};

std::ostream& operator<<(std::ostream& os, const Node& n) {
  return os << std::string(2 * n.depth, ' ') << n.name;
}

// The main thread's ranges in the dsdiag domain, in push order, with their depth.
std::vector<Node> RecordedTree(const std::string& path) {
  std::ifstream in(path);
  std::vector<Node> out;
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string part; std::getline(ss, part, '\t');) f.push_back(part);
    // push <thread> <domain> <level> <kind> <text>
    if (f.size() >= 6 && f[0] == "push" && f[1] == "0" && f[2] == "dsdiag")
      out.push_back({std::stoi(f[3]), f[5]});
  }
  return out;
}

// The same tree rebuilt from the trace: spans by start time, nested by containment.
std::vector<Node> TraceTree(const Trace& t) {
  struct Span {
    int64_t start, end;
    std::string name;
  };
  std::vector<Span> spans;
  std::map<int64_t, int64_t> step_start;
  for (const auto& r : t.records) {
    const std::string type = Str(r, "type");
    if (type == "step_begin") step_start[Int(r, "step")] = Int(r, "ts");
    if (type == "step")
      spans.push_back(
          {Int(r, "ts"), Int(r, "ts") + Int(r, "dur"), "step " + std::to_string(Int(r, "step"))});
    if (type == "phase")
      spans.push_back({Int(r, "ts"), Int(r, "ts") + Int(r, "dur"), Str(r, "name")});
    if (type == "coll" && !r.Find("tid"))
      spans.push_back(
          {Int(r, "ts"), Int(r, "ts") + Int(r, "dur"),
           Str(r, "op") + " seq " + std::to_string(Int(r, "seq")) + " " + Str(r, "tag")});
  }
  std::stable_sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
    return a.start != b.start ? a.start < b.start : a.end > b.end;
  });
  std::vector<Node> out;
  std::vector<int64_t> open_ends;
  for (const auto& s : spans) {
    while (!open_ends.empty() && open_ends.back() <= s.start) open_ends.pop_back();
    out.push_back({static_cast<int>(open_ends.size()), s.name});
    open_ends.push_back(s.end);
  }
  return out;
}

TEST(NvtxTrainerTest, EveryRanksRangeTreeIsItsTracesTree) {
  const std::string recorder = DSDIAG_NVTX_RECORDER;
  if (recorder.empty()) GTEST_SKIP() << "built without the CUDA toolkit's nvtx3 headers";
  TempDir dir("nvtx-trainer");
  setenv("NVTX_INJECTION64_PATH", recorder.c_str(), 1);
  setenv("DSDIAG_NVTX_RECORD", (dir / "nvtx-%p.tsv").c_str(), 1);
  const int status = RunDsdiag(
      // Full mode: light mode writes no phase records for the trace's tree (trace v2).
      {"train", "--nproc", "2", "--steps", "4", "--health-every", "2", "--probes", "full", "--out",
       dir / "run"},
      dir / "log");
  unsetenv("NVTX_INJECTION64_PATH");
  unsetenv("DSDIAG_NVTX_RECORD");
  ASSERT_EQ(status, 0) << ReadFile(dir / "log");

  for (const Trace& t : ReadRun(dir / "run", 2)) {
    const std::string file = dir / ("nvtx-" + std::to_string(Int(t.header(), "pid")) + ".tsv");
    const std::vector<Node> recorded = RecordedTree(file);
    const std::vector<Node> expected = TraceTree(t);
    ASSERT_FALSE(expected.empty());
    // Four steps, each with its phases and its gradient buckets inside.
    EXPECT_EQ(
        std::count_if(expected.begin(), expected.end(),
                      [](const Node& n) { return n.depth == 0 && n.name.rfind("step ", 0) == 0; }),
        4);
    EXPECT_EQ(recorded, expected) << "rank " << Int(t.header(), "rank") << ", " << file;
  }
}

}  // namespace
}  // namespace dsdiag::trainer_test
