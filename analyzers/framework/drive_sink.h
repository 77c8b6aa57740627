// DriveSink: where the step driver's reading side (the windows over every rank's trace,
// step_driver.cc) sends what it reads, in the order the analyzers must see it. The serial
// drive sends it to DispatchSink, which calls the analyzers at once; the parse-ahead drive
// (parse_ahead.h) reads on a thread of its own and replays the same sequence to a
// DispatchSink on the driver thread. Ranks are indices into RunContext::ranks.
#pragma once

#include <cstddef>
#include <cstdint>

#include "analyzers/framework/record_dispatch.h"
#include "analyzers/framework/run_context.h"
#include "analyzers/framework/step_driver.h"

namespace dsdiag::analyzers {

class DriveSink {
 public:
  virtual ~DriveSink() = default;
  // A record of `rank`, valid during the call only.
  virtual void Record(size_t rank, const trace::Record& record) = 0;
  virtual void RankEnded(size_t rank, const RankEnd& end) = 0;
  virtual void StepDone(int64_t step) = 0;
  // After each window (each rank, when ranks are read whole one after another).
  virtual void Progress(const DriveProgress& progress) = 0;
};

// Calls the analyzers (through `dispatch`) and fills the result's ends and steps_done: what
// each record says about its rank's end is noted here (ObserveRecord), on the thread that
// calls the analyzers, where the record's fields are looked up anyway; the reading side's
// RankEnd brings what the reader went through (TakeReaderEnd).
class DispatchSink final : public DriveSink {
 public:
  DispatchSink(const RunContext& run, const Dispatch& dispatch, const DriveOptions& options,
               DriveResult* result)
      : run_(run), dispatch_(dispatch), options_(options), result_(result) {
    result_->ends.assign(run.ranks.size(), RankEnd{});
    for (RankEnd& end : result_->ends) end.records = 1;  // the header, read by the loader
  }

  void Record(size_t rank, const trace::Record& record) override {
    dispatch_.Record(run_.ranks[rank], record);
    ObserveRecord(record, &result_->ends[rank]);
  }
  void RankEnded(size_t rank, const RankEnd& reader_end) override {
    RankEnd& end = result_->ends[rank];
    AddReaderEnd(reader_end, &end);
    dispatch_.RankEnded(run_.ranks[rank], end);
  }
  void StepDone(int64_t step) override {
    dispatch_.StepDone(step);
    ++result_->steps_done;
  }
  void Progress(const DriveProgress& progress) override {
    if (options_.progress) options_.progress(progress);
  }

 private:
  const RunContext& run_;
  const Dispatch& dispatch_;
  const DriveOptions& options_;
  DriveResult* result_;
};

}  // namespace dsdiag::analyzers
