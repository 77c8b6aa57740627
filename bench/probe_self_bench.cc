// The probes' cost as the probes measure it: a trace's `step` records carry `probe_ns`, the
// time spent inside probe calls since the previous step record (probes/probe_timer.h).
// Over the steps after the first SKIP (warm-up), prints the total step time over the step
// time less the probes' time — the overhead the probes would show if removing them removed
// exactly their own time, comparable with probe_overhead_* — and, on stderr, the means.
//
//   dsdiag_bench_probe_self TRACE_FILE SKIP
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "trace/record_types.h"
#include "trace/trace_reader.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s TRACE_FILE SKIP\n", argv[0]);
    return 2;
  }
  const int64_t skip = std::atoll(argv[2]);
  std::string error;
  auto reader = dsdiag::trace::TraceReader::Open(argv[1], &error);
  if (!reader) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }
  int64_t steps = 0, seen = 0, step_ns = 0, probe_ns = 0;
  dsdiag::trace::Record r;
  while (reader->Next(&r)) {
    if (r.type_id() != dsdiag::trace::rec_id::kStep || seen++ < skip) continue;
    const auto dur = r.Int("dur");
    const auto probes = r.Int("probe_ns");
    if (!dur || !probes) {
      std::fprintf(stderr, "%s:%lld: a step record without dur or probe_ns\n", argv[1],
                   static_cast<long long>(r.line()));
      return 1;
    }
    ++steps;
    step_ns += *dur;
    probe_ns += *probes;
  }
  if (!reader->issues().empty() || steps == 0 || probe_ns >= step_ns) {
    std::fprintf(stderr, "%s: %s\n", argv[1],
                 steps == 0                 ? "no step past the warm-up"
                 : reader->issues().empty() ? "probe time not below step time"
                                            : reader->issues().front().ToString().c_str());
    return 1;
  }
  std::fprintf(stderr, "probe self-time: %lld steps, %.1f us of probes in %.3f ms steps\n",
               static_cast<long long>(steps), probe_ns / 1e3 / steps, step_ns / 1e6 / steps);
  std::printf("%.4f\n", static_cast<double>(step_ns) / static_cast<double>(step_ns - probe_ns));
  return 0;
}
