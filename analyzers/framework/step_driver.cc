#include "analyzers/framework/step_driver.h"

#include <sys/resource.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>
#include <thread>

#include "analyzers/framework/input_error.h"
#include "analyzers/framework/record_dispatch.h"
#include "analyzers/framework/threaded_lockstep.h"
#include "trace/record_types.h"
#include "trace/trace_reader.h"

namespace dsdiag::analyzers {
namespace {

constexpr size_t kDefaultMaxOpenFiles = 512;
constexpr size_t kReservedFiles = 64;  // stdio, the output, whatever analyzers open

size_t AutoMaxOpenFiles() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY)
    return kDefaultMaxOpenFiles;
  const size_t soft = static_cast<size_t>(limit.rlim_cur);
  return std::max(kDefaultMaxOpenFiles, soft > kReservedFiles ? soft - kReservedFiles : 0);
}

// One rank's reader, the record it has looked at ahead, and what its end looks like so far.
class RankStream {
 public:
  explicit RankStream(const RankInfo* info) : info_(info) {}

  void Open() {
    std::string error;
    reader_ = trace::TraceReader::Open(info_->path, &error);
    if (!reader_) throw RunInputError("cannot read trace '" + info_->path + "': " + error);
    reader_->ReadHeader();
    end_.records = 1;  // the header, read by the loader already
    Advance();
  }

  const RankInfo& info() const { return *info_; }
  bool pending() const { return pending_; }
  int64_t pending_step() const { return record_.step(); }
  const trace::Record& record() const { return record_; }
  bool ended() const { return ended_; }
  int64_t bytes_read() const { return reader_ ? reader_->bytes_read() : end_.bytes_read; }

  // Notes the pending record as delivered and looks at the next one.
  void Consume() {
    ObserveRecord(record_, &end_);
    Advance();
  }

  // Closes the file; the rank's RankEnd is final.
  const RankEnd& Close() {
    TakeReaderEnd(*reader_, &end_);
    reader_.reset();
    ended_ = true;
    return end_;
  }

 private:
  void Advance() {
    pending_ = reader_->Next(&record_);
    // Whether or not the reader hands line 1 out again, the header is not an event.
    while (pending_ && IsLineOneHeader(record_)) pending_ = reader_->Next(&record_);
  }

  const RankInfo* info_;
  std::unique_ptr<trace::TraceReader> reader_;
  trace::Record record_;
  bool pending_ = false;
  bool ended_ = false;
  RankEnd end_;
};

// Delivers the stream's records up to step `step`; closes it when its file runs out.
void DeliverUpTo(RankStream* stream, int64_t step, const Dispatch& dispatch,
                 std::vector<RankEnd>* ends, size_t index) {
  while (stream->pending() && stream->pending_step() <= step) {
    dispatch.Record(stream->info(), stream->record());
    stream->Consume();
  }
  if (!stream->pending() && !stream->ended()) {
    (*ends)[index] = stream->Close();
    dispatch.RankEnded(stream->info(), (*ends)[index]);
  }
}

void ReportProgress(const std::vector<RankStream>& streams, int64_t step,
                    const DriveOptions& options) {
  if (!options.progress) return;
  DriveProgress p;
  p.step = step;
  for (const auto& s : streams) p.bytes_read += s.bytes_read();
  options.progress(p);
}

void DriveLockstep(std::vector<RankStream>* streams, const Dispatch& dispatch,
                   const DriveOptions& options, DriveResult* result) {
  for (auto& s : *streams) s.Open();
  // A rank with nothing past its header ends before the first step.
  for (size_t i = 0; i < streams->size(); ++i)
    if (!(*streams)[i].pending()) DeliverUpTo(&(*streams)[i], 0, dispatch, &result->ends, i);
  for (;;) {
    // The looked-ahead records all belong to steps after the last one done, so the
    // lowest of them is the next step; steps nobody wrote are skipped.
    bool any = false;
    int64_t step = 0;
    for (const auto& s : *streams) {
      if (!s.pending()) continue;
      step = any ? std::min(step, s.pending_step()) : s.pending_step();
      any = true;
    }
    if (!any) break;
    for (size_t i = 0; i < streams->size(); ++i)
      DeliverUpTo(&(*streams)[i], step, dispatch, &result->ends, i);
    dispatch.StepDone(step);
    ++result->steps_done;
    ReportProgress(*streams, step, options);
  }
}

void DrivePerRank(std::vector<RankStream>* streams, const Dispatch& dispatch,
                  const DriveOptions& options, DriveResult* result) {
  std::set<int64_t> steps;
  for (size_t i = 0; i < streams->size(); ++i) {
    RankStream& s = (*streams)[i];
    s.Open();
    while (s.pending()) {
      steps.insert(s.pending_step());
      dispatch.Record(s.info(), s.record());
      s.Consume();
    }
    result->ends[i] = s.Close();
    dispatch.RankEnded(s.info(), result->ends[i]);
    ReportProgress(*streams, steps.empty() ? 0 : *steps.rbegin(), options);
  }
  for (int64_t step : steps) {
    dispatch.StepDone(step);
    ++result->steps_done;
  }
}

int ReaderThreads(const DriveOptions& options, size_t ranks) {
  constexpr int kMinAutoCpus = 4;
  int jobs = options.jobs;
  if (jobs <= 0) {
    if (const char* env = std::getenv("DSDIAG_JOBS")) jobs = std::atoi(env);
  }
  if (jobs <= 0) {
    const int cpus = static_cast<int>(std::thread::hardware_concurrency());
    jobs = cpus >= kMinAutoCpus ? cpus : 1;
  }
  if (jobs <= 1 || ranks < 2) return 0;
  return std::min({jobs, kMaxReaderThreads, static_cast<int>(ranks)});
}

}  // namespace

DriveResult DriveRun(const RunContext& run, const std::vector<std::unique_ptr<Analyzer>>& analyzers,
                     const DriveOptions& options) {
  for (const auto& a : analyzers) a->Begin(run);
  DriveResult result;
  result.ends.resize(run.ranks.size());
  std::vector<RankStream> streams;
  streams.reserve(run.ranks.size());
  for (const auto& rank : run.ranks) streams.emplace_back(&rank);

  const Dispatch dispatch(analyzers);
  const size_t max_open = options.max_open_files ? options.max_open_files : AutoMaxOpenFiles();
  result.lockstep = streams.size() <= max_open;
  const int threads = ReaderThreads(options, streams.size());
  if (result.lockstep && threads > 0) {
    result.reader_threads = threads;
    DriveLockstepThreaded(run, dispatch, options, threads, &result);
  } else if (result.lockstep) {
    DriveLockstep(&streams, dispatch, options, &result);
  } else {
    DrivePerRank(&streams, dispatch, options, &result);
  }
  return result;
}

}  // namespace dsdiag::analyzers