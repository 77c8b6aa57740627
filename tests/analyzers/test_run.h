// TestRun: a throw-away run directory for analyzer tests, filled with traces written by
// the real TraceWriter (so tests exercise the format the probes produce), plus raw text
// for damage the writer never makes.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "trace/trace_header.h"
#include "trace/trace_writer.h"

namespace dsdiag::analyzers::testing {

class TestRun {
 public:
  TestRun();   // a fresh directory under $TMPDIR
  ~TestRun();  // removes it
  TestRun(const TestRun&) = delete;
  TestRun& operator=(const TestRun&) = delete;

  const std::string& dir() const { return dir_; }
  std::string Path(std::string_view file_name) const;

  // The header every rank of a test run shares, for `rank` of `world_size`.
  static trace::TraceHeader Header(int rank, int world_size);

  // Creates the rank's trace (rank-<R>.jsonl unless `file_name` is given) and writes the
  // header. The writer flushes when destroyed.
  std::unique_ptr<trace::TraceWriter> Open(const trace::TraceHeader& header,
                                           std::string file_name = "");
  // Steps [from, to): step_begin, the five phases, step.
  static void WriteSteps(trace::TraceWriter* w, int from, int to);
  // An `end` record; `detail_key` is "signal" or "error" when `detail` is given.
  static void WriteEnd(trace::TraceWriter* w, std::string_view reason, int status,
                       std::string_view detail_key = {}, std::string_view detail = {});
  // One record of trace/records/ (a GroupRecord, a ParamTable, ...) at the writer's step.
  template <class R>
  static void Write(trace::TraceWriter* w, const R& record) {
    auto r = w->Begin(R::kType);
    AppendFields(record, &r.line());
  }
  // Header, `steps` steps, end "ok".
  void WriteCleanRank(const trace::TraceHeader& header, int steps);

  void AppendRaw(std::string_view file_name, std::string_view text) const;
  void WriteFile(std::string_view file_name, std::string_view text) const;

 private:
  std::string dir_;
};

}  // namespace dsdiag::analyzers::testing
