// The one way tests write rank traces: a header made from a few facts (TestHeader) and a
// RankTrace that writes it and then records of trace/records/ at chosen times, through the
// real TraceWriter — the bytes the probes write for the same values. A step is written with
// StepTrace (step_trace.h), the shape each suite gives it described there; a record a test
// must spell by hand (damage, a newer writer's field) goes through At().
//
//   test_support::RankTrace trace(dir, test_support::TestHeader({.rank = 1, .world_size = 2}));
//   trace.Write(records::LoaderRecord{...}, ts, step);
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

#include "trace/record_types.h"
#include "trace/records/end_record.h"
#include "trace/run_files.h"
#include "trace/trace_header.h"
#include "trace/trace_writer.h"

namespace dsdiag::test_support {

// What a test's header says; the rest is fixed (host node0, pid 100 + rank, dsdiag 0.1.0).
struct HeaderFacts {
  int rank = 0;
  int world_size = 1;
  std::string run_id = "test-run";
  int64_t mono = 0;    // the rank's monotonic clock when...
  int64_t wall = 0;    // ...its wall clock read this
  int64_t offset = 0;  // to rank 0's clock
  int64_t offset_err = 1000;
  std::string host = "node0";
};

inline trace::TraceHeader TestHeader(const HeaderFacts& f) {
  trace::TraceHeader h;
  h.schema = std::string(trace::kSchema);
  h.run_id = f.run_id;
  h.rank = f.rank;
  h.world_size = f.world_size;
  h.local_rank = f.rank;
  h.host = f.host;
  h.pid = 100 + f.rank;
  h.versions = {{"dsdiag", "0.1.0"}};
  h.clock.mono_ns = f.mono;
  h.clock.wall_ns = f.wall;
  h.clock.offset_ns = f.offset;
  h.clock.offset_err_ns = f.offset_err;
  return h;
}

// Writes one rank's trace, `rank-<R>.jsonl` under `dir`, with explicit times (ns of the
// rank's monotonic clock). Flushed line by line: readable while it is being written.
class RankTrace {
 public:
  RankTrace(const std::string& dir, const trace::TraceHeader& header)
      : path_(dir + "/" + trace::RankTraceFileName(header.rank)) {
    trace::TraceWriter::Options options;
    options.flush_interval_ms = 0;
    std::string error;
    writer_ = trace::TraceWriter::Open(path_, options, &error);
    if (!writer_) throw std::runtime_error(error);
    writer_->WriteHeader(header);
  }
  const std::string& path() const { return path_; }
  trace::TraceWriter* writer() { return writer_.get(); }

  // One record of trace/records/ at `ts` in `step`.
  template <class R>
  void Write(const R& record, int64_t ts, int64_t step) {
    auto r = At(R::kType, ts, step);
    AppendFields(record, &r.line());
  }
  // A record the test spells itself.
  trace::TraceWriter::Record At(std::string_view type, int64_t ts, int64_t step) {
    writer_->SetStep(step);
    return writer_->BeginAt(type, ts);
  }
  void End(int64_t ts, int64_t step, std::string_view reason = trace::records::end_reason::kOk,
           int status = 0) {
    trace::records::EndRecord end;
    end.reason = reason;
    end.status = status;
    Write(end, ts, step);
  }
  void Close() { writer_.reset(); }

 private:
  std::string path_;
  std::unique_ptr<trace::TraceWriter> writer_;
};

}  // namespace dsdiag::test_support
