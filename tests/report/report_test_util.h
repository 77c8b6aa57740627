// Helpers of the report tests: scratch dirs, small traces written with the real TraceWriter
// at chosen times, and lookups in the report's HTML by section and attribute.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/support/files.h"
#include "tests/support/rank_trace.h"
#include "tests/support/step_trace.h"
#include "tests/support/temp_dir.h"
#include "trace/record_types.h"
#include "trace/records/coll_record.h"
#include "trace/records/phase_record.h"
#include "trace/records/step_record.h"
#include "trace/run_files.h"
#include "trace/trace_header.h"
#include "trace/trace_writer.h"

namespace dsdiag::report::testing {

using test_support::Contains;
using test_support::Count;
using test_support::ReadFile;
using test_support::WriteFile;

// A scratch dir named dsdiag-report-XXXXXX.
class TempDir : public test_support::TempDir {
 public:
  TempDir() : test_support::TempDir("report") {}
};

// The text of <section id="ID"> ... </section> (sections do not nest), or "".
inline std::string Section(const std::string& html, const std::string& id) {
  const size_t start = html.find("<section id=\"" + id + "\">");
  if (start == std::string::npos) return "";
  const size_t end = html.find("</section>", start);
  return html.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

// One row of a heatmap (<g class="hm-row" ...>) or of the phase bars (<g class="bar" ...>).
struct Row {
  std::string ranks;
  std::map<std::string, double> data;  // data-* attributes without the prefix
};

// The rows of class `cls` in `html`, in order, with their numeric data-* attributes.
inline std::vector<Row> Rows(const std::string& html, const std::string& cls) {
  std::vector<Row> rows;
  const std::regex group("<g class=\"" + cls + "\"([^>]*)>");
  const std::regex attr("data-([a-z-]+)=\"([^\"]*)\"");
  for (auto it = std::sregex_iterator(html.begin(), html.end(), group);
       it != std::sregex_iterator(); ++it) {
    Row row;
    const std::string attrs = (*it)[1];
    for (auto a = std::sregex_iterator(attrs.begin(), attrs.end(), attr);
         a != std::sregex_iterator(); ++a) {
      if ((*a)[1] == "ranks") {
        row.ranks = (*a)[2];
      } else {
        row.data[(*a)[1]] = std::stod((*a)[2]);
      }
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

// A header for `rank` whose monotonic clock reads `mono` when its wall clock reads `wall`
// (the run of an fp16 job of 4 steps).
inline trace::TraceHeader Header(int rank, int world_size, int64_t mono, int64_t wall,
                                 int64_t offset) {
  trace::TraceHeader h = test_support::TestHeader(
      {rank, world_size, "report-test", mono, wall, offset, /*offset_err=*/1000, "node0"});
  h.env = {{"OMP_NUM_THREADS", "1"}};
  h.config.Set("steps", 4);
  h.config.Set("amp", "fp16");
  return h;
}

// One rank's trace (tests/support/rank_trace.h) with the report tests' shape of a step.
class RankTrace : public test_support::RankTrace {
 public:
  using test_support::RankTrace::RankTrace;
  // step_begin at t; one allreduce (pg 0, seq `seq`) entered at t + enter lasting `coll`;
  // the step record (dur `dur`, phases data = dur/4, backward = dur/2, sync = dur/4, loss).
  // `probe_ns` >= 0 adds the probes' own time to the step record.
  void Step(int64_t step, int64_t t, int64_t dur, int64_t seq, int64_t enter, int64_t coll,
            double loss, int64_t probe_ns = -1) {
    trace::records::CollRecord c;
    c.seq = seq;
    c.op = "allreduce";
    c.dtype = "f32";
    c.count = 1024;
    c.bytes = 4096;
    c.dur = coll;
    c.tag = "grad-bucket-0";
    test_support::StepTrace s(step, t);
    s.Coll(c, t + enter)
        .Total(trace::phase::kData, dur / 4)
        .Total(trace::phase::kBackward, dur / 2)
        .Total(trace::phase::kSync, dur / 4);
    trace::records::StepRecord& r = s.record();
    r.dur = dur;
    r.loss = loss;
    r.lr = 0.01;
    r.samples = 32;
    r.probe_ns = probe_ns;
    s.Write(writer());
  }
};

}  // namespace dsdiag::report::testing
