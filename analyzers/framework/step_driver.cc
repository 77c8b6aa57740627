#include "analyzers/framework/step_driver.h"

#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>
#include <thread>

#include "analyzers/framework/drive_sink.h"
#include "analyzers/framework/input_error.h"
#include "analyzers/framework/parse_ahead.h"
#include "analyzers/framework/record_dispatch.h"
#include "analyzers/framework/threaded_lockstep.h"
#include "trace/byte_source.h"
#include "trace/reader_pool.h"
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
// Between visits the reader is suspended: `record_` is then invalid and is read again by
// Resume (the reader hands the same record out once more).
class RankStream {
 public:
  explicit RankStream(const RankInfo* info) : info_(info) {}

  // Reads the header and the first record; `keep_open`: the file stays open while suspended.
  void Open(trace::ReaderPool* pool, bool keep_open) {
    std::string error;
    reader_ = trace::TraceReader::Open(info_->path, &error);
    if (!reader_) throw RunInputError("cannot read trace '" + info_->path + "': " + error);
    keep_open_ = keep_open;
    reader_->Resume(pool);
    reader_->SkipHeader(info_->header);
    Advance();
  }
  bool opened() const { return reader_ != nullptr || ended_; }

  const RankInfo& info() const { return *info_; }
  bool pending() const { return pending_; }
  int64_t pending_step() const { return pending_step_; }
  const trace::Record& record() const { return record_; }
  bool ended() const { return ended_; }
  int64_t bytes_read() const { return reader_ ? reader_->bytes_read() : end_.bytes_read; }

  // Notes the pending record as delivered and looks at the next one. True when the record
  // reached a step above all the rank's earlier ones (a step that lockstep would have done).
  bool Consume() {
    const bool higher = !any_step_ || record_.step() > highest_step_;
    if (higher) highest_step_ = record_.step();
    any_step_ = true;
    Advance();
    return higher;
  }

  // Gives the reader's buffers back until the next visit (a compressed trace keeps them).
  void Suspend(trace::ReaderPool* pool) {
    if (reader_->Suspend(pool, !keep_open_)) suspended_ = true;
  }
  void Resume(trace::ReaderPool* pool) {
    if (!suspended_) return;
    suspended_ = false;
    reader_->Resume(pool);
    Advance();  // the looked-ahead record, once more
  }

  // Closes the file; the RankEnd says what the reader went through (TakeReaderEnd: what
  // the records say is noted where they are delivered, DispatchSink).
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
    if (pending_) pending_step_ = record_.step();
  }

  const RankInfo* info_;
  std::unique_ptr<trace::TraceReader> reader_;
  trace::Record record_;
  int64_t pending_step_ = 0;  // kept while suspended, when record_ is not valid
  int64_t highest_step_ = 0;
  bool any_step_ = false;
  bool pending_ = false;
  bool suspended_ = false;
  bool keep_open_ = true;
  bool ended_ = false;
  RankEnd end_;
};

// The drive's shared state: what a visit to a rank needs.
struct Drive {
  std::vector<RankStream>* streams;
  DriveSink* sink;
  trace::ReaderPool* pool;
};

void EndRank(const Drive& d, size_t index) {
  d.sink->RankEnded(index, (*d.streams)[index].Close());
}

// One rank's turn in a window: its records with step <= `last`, in file order. Steps it
// reaches go into *steps; its file ends, or its reader is suspended until the next visit.
void VisitRank(const Drive& d, size_t index, int64_t last, std::set<int64_t>* steps) {
  RankStream& s = (*d.streams)[index];
  s.Resume(d.pool);
  while (s.pending() && s.pending_step() <= last) {
    d.sink->Record(index, s.record());
    const int64_t step = s.pending_step();
    if (s.Consume()) steps->insert(step);
  }
  if (!s.pending()) {
    EndRank(d, index);
  } else {
    s.Suspend(d.pool);
  }
}

void ReportProgress(const Drive& d, int64_t step, const DriveOptions& options) {
  if (!options.progress) return;
  DriveProgress p;
  p.step = step;
  for (const auto& s : *d.streams) p.bytes_read += s.bytes_read();
  d.sink->Progress(p);
}

void StepsDone(const Drive& d, const std::set<int64_t>& steps) {
  for (int64_t step : steps) d.sink->StepDone(step);
}

// The last step of the window that starts at `first`.
int64_t WindowEnd(int64_t first, int64_t window) {
  return window - 1 > INT64_MAX - first ? INT64_MAX : first + (window - 1);
}

// The whole run as one window, without reading ahead: each rank is opened when its turn
// comes, read whole and closed, so at most one file is open.
void DriveWholeRun(const Drive& d, const DriveOptions& options) {
  std::set<int64_t> steps;
  for (size_t i = 0; i < d.streams->size(); ++i) {
    RankStream& s = (*d.streams)[i];
    s.Open(d.pool, /*keep_open=*/true);
    VisitRank(d, i, INT64_MAX, &steps);
    ReportProgress(d, steps.empty() ? 0 : *steps.rbegin(), options);
  }
  StepsDone(d, steps);
}

// Windows of `window` steps. `open_files`: how many plain traces may stay open between
// visits (compressed ones always do).
void DriveWindows(const Drive& d, int64_t window, size_t open_files, const DriveOptions& options) {
  std::vector<RankStream>& streams = *d.streams;
  for (size_t i = 0; i < streams.size(); ++i) {
    const bool compressed = trace::IsCompressedName(streams[i].info().path);
    const bool keep_open = compressed || open_files > 0;
    if (!compressed && open_files > 0) --open_files;
    streams[i].Open(d.pool, keep_open);
    // A rank with nothing past its header ends before the first step.
    if (!streams[i].pending()) {
      EndRank(d, i);
    } else {
      streams[i].Suspend(d.pool);
    }
  }
  std::set<int64_t> steps;
  for (;;) {
    // The looked-ahead records all belong to steps after the last window, so the lowest
    // of them starts the next one; steps nobody wrote are skipped.
    bool any = false;
    int64_t first = 0;
    for (const auto& s : streams) {
      if (!s.pending()) continue;
      first = any ? std::min(first, s.pending_step()) : s.pending_step();
      any = true;
    }
    if (!any) break;
    const int64_t last = WindowEnd(first, window);
    steps.clear();
    for (size_t i = 0; i < streams.size(); ++i) {
      // A rank with nothing in this window is not even resumed.
      if (streams[i].pending() && streams[i].pending_step() <= last) VisitRank(d, i, last, &steps);
    }
    StepsDone(d, steps);
    ReportProgress(d, steps.empty() ? first : *steps.rbegin(), options);
  }
}

// How the ranks are read: by reader threads in lockstep, on one reading thread ahead of the
// driver thread (parse_ahead.h), or on the driver thread.
struct ReadingPlan {
  int lockstep_threads = 0;  // 0: not in threaded lockstep
  bool parse_ahead = false;  // when not in threaded lockstep
};

// jobs as given, else $DSDIAG_JOBS, else automatic: the CPUs when there are kMinAutoCpus or
// more; on 2 or 3 one reading thread ahead of the driver (threaded lockstep was measured to
// cost more than it gains there: 2.5x the serial path's wall time at 1,024 ranks).
ReadingPlan PlanReading(const DriveOptions& options, size_t ranks) {
  constexpr int kMinAutoCpus = 4;
  ReadingPlan plan;
  if (options.force_parse_ahead) {
    plan.parse_ahead = true;
    return plan;
  }
  int jobs = options.jobs;
  if (jobs <= 0) {
    if (const char* env = std::getenv("DSDIAG_JOBS")) jobs = std::atoi(env);
  }
  if (jobs <= 0) {
    const int cpus = static_cast<int>(std::thread::hardware_concurrency());
    if (cpus < kMinAutoCpus) {
      plan.parse_ahead = cpus >= 2;
      return plan;
    }
    jobs = cpus;
  }
  plan.parse_ahead = jobs > 1;
  if (jobs > 1 && ranks >= 2)
    plan.lockstep_threads = std::min({jobs, kMaxReaderThreads, static_cast<int>(ranks)});
  return plan;
}

// The window asked for: DriveOptions::step_window, else $DSDIAG_STEP_WINDOW; 0 when
// neither says (automatic).
int64_t RequestedWindow(const DriveOptions& options) {
  if (options.step_window > 0) return options.step_window;
  const char* env = std::getenv("DSDIAG_STEP_WINDOW");
  if (env == nullptr || *env == '\0') return 0;
  if (std::string(env) == "all") return kWholeRun;
  char* end = nullptr;
  errno = 0;
  const long long value = std::strtoll(env, &end, 10);
  if (errno != 0 || *end != '\0' || value <= 0) {
    throw RunInputError(std::string("DSDIAG_STEP_WINDOW must be a positive number of steps or "
                                    "'all', not '") +
                        env + "'");
  }
  return value;
}

int64_t AutoWindow(size_t ranks) {
  return std::clamp<int64_t>(kRankStepBudget / std::max<int64_t>(1, static_cast<int64_t>(ranks)), 1,
                             kMaxAutoWindowSteps);
}

}  // namespace

DriveResult DriveRun(const RunContext& run, const std::vector<std::unique_ptr<Analyzer>>& analyzers,
                     const DriveOptions& options) {
  const int64_t requested = RequestedWindow(options);
  for (const auto& a : analyzers) a->Begin(run);
  DriveResult result;
  result.ends.resize(run.ranks.size());  // DispatchSink and the threaded lockstep fill them
  std::vector<RankStream> streams;
  streams.reserve(run.ranks.size());
  for (const auto& rank : run.ranks) streams.emplace_back(&rank);

  const Dispatch dispatch(analyzers);
  const size_t ranks = streams.size();
  const size_t max_open = options.max_open_files ? options.max_open_files : AutoMaxOpenFiles();
  const ReadingPlan plan = PlanReading(options, ranks);
  if (plan.lockstep_threads > 0 && requested <= 1 && ranks <= max_open &&
      ranks <= kMaxThreadedRanks) {
    result.reader_threads = plan.lockstep_threads;
    result.step_window = 1;
    DriveLockstepThreaded(run, dispatch, options, plan.lockstep_threads, &result);
    return result;
  }
  size_t compressed = 0;
  for (const auto& rank : run.ranks) compressed += trace::IsCompressedName(rank.path) ? 1 : 0;
  result.files_kept_open = ranks <= max_open;
  // Compressed readers cannot be closed between visits: past the budget, one at a time.
  result.step_window = compressed > max_open ? kWholeRun
                       : requested           ? requested
                                             : AutoWindow(ranks);
  const auto read = [&](DriveSink& sink) {
    trace::ReaderPool pool;
    const Drive drive{&streams, &sink, &pool};
    if (result.step_window == kWholeRun) {
      DriveWholeRun(drive, options);
    } else {
      DriveWindows(drive, result.step_window, max_open - compressed, options);
    }
  };
  DispatchSink to_analyzers(run, dispatch, options, &result);
  if (plan.parse_ahead) {
    result.reader_threads = 1;
    result.parse_ahead = true;
    DriveParseAhead(read, to_analyzers);
  } else {
    read(to_analyzers);
  }
  return result;
}

}  // namespace dsdiag::analyzers
