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
#include "tests/support/temp_dir.h"
#include "trace/record_types.h"
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

// A header for `rank` whose monotonic clock reads `mono` when its wall clock reads `wall`.
inline trace::TraceHeader Header(int rank, int world_size, int64_t mono, int64_t wall,
                                 int64_t offset) {
  trace::TraceHeader h;
  h.schema = std::string(trace::kSchema);
  h.run_id = "report-test";
  h.rank = rank;
  h.world_size = world_size;
  h.local_rank = rank;
  h.host = "node0";
  h.pid = 100 + rank;
  h.versions = {{"dsdiag", "0.1.0"}};
  h.env = {{"OMP_NUM_THREADS", "1"}};
  h.config.Set("steps", 4);
  h.config.Set("amp", "fp16");
  h.clock.mono_ns = mono;
  h.clock.wall_ns = wall;
  h.clock.offset_ns = offset;
  h.clock.offset_err_ns = 1000;
  return h;
}

// Writes one rank's trace with explicit times (ns of the rank's monotonic clock).
class RankTrace {
 public:
  RankTrace(const std::string& dir, const trace::TraceHeader& header) {
    trace::TraceWriter::Options options;
    options.flush_interval_ms = 0;
    std::string error;
    writer_ = trace::TraceWriter::Open(dir + "/" + trace::RankTraceFileName(header.rank), options,
                                       &error);
    if (!writer_) throw std::runtime_error(error);
    writer_->WriteHeader(header);
  }
  trace::TraceWriter::Record At(std::string_view type, int64_t ts, int64_t step) {
    writer_->SetStep(step);
    return writer_->BeginAt(type, ts);
  }
  // step_begin at t; one allreduce (pg 0, seq `seq`) entered at t + enter lasting `coll`;
  // the step record (dur `dur`, phases data = dur/4, backward = dur/2, sync = dur/4, loss).
  // `probe_ns` >= 0 adds the probes' own time to the step record.
  void Step(int64_t step, int64_t t, int64_t dur, int64_t seq, int64_t enter, int64_t coll,
            double loss, int64_t probe_ns = -1) {
    At(trace::rec::kStepBegin, t, step).line().Field("epoch", int64_t{0});
    At(trace::rec::kCollective, t + enter, step)
        .line()
        .Field("pg", int64_t{0})
        .Field("seq", seq)
        .Field("op", "allreduce")
        .Field("dtype", "f32")
        .Field("n", int64_t{1024})
        .Field("bytes", int64_t{4096})
        .Field("dur", coll)
        .Field("tag", "grad-bucket-0");
    auto r = At(trace::rec::kStep, t, step);
    r.line()
        .Field("dur", dur)
        .Field("epoch", int64_t{0})
        .Field("loss", loss)
        .Field("lr", 0.01)
        .Field("samples", int64_t{32})
        .BeginObject("phases")
        .Field("data", dur / 4)
        .Field("backward", dur / 2)
        .Field("sync", dur / 4)
        .EndObject();
    if (probe_ns >= 0) r.line().Field("probe_ns", probe_ns);
  }
  void End(int64_t ts, int64_t step) {
    At(trace::rec::kEnd, ts, step).line().Field("reason", "ok").Field("status", 0);
  }

 private:
  std::unique_ptr<trace::TraceWriter> writer_;
};

}  // namespace dsdiag::report::testing
