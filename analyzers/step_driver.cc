#include "analyzers/step_driver.h"

#include <sys/resource.h>

#include <algorithm>
#include <set>
#include <string>

#include "analyzers/input_error.h"
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
    Observe(record_);
    Advance();
  }

  // Closes the file; the rank's RankEnd is final.
  const RankEnd& Close() {
    end_.lines_read = reader_->lines_read();
    end_.bytes_read = reader_->bytes_read();
    end_.issues = reader_->issues();
    end_.issue_count = reader_->issue_count();
    end_.truncated_tail = reader_->saw_truncated_tail();
    reader_.reset();
    ended_ = true;
    return end_;
  }

 private:
  void Advance() {
    pending_ = reader_->Next(&record_);
    // Whether or not the reader hands line 1 out again, the header is not an event.
    while (pending_ && record_.type() == trace::rec::kHeader && record_.line() == 1)
      pending_ = reader_->Next(&record_);
  }

  void Observe(const trace::Record& r) {
    ++end_.records;
    end_.max_step = std::max(end_.max_step, r.step());
    end_.last_ts = r.ts();
    end_.last_line = r.line();
    const std::string_view type = r.type();
    if (type == trace::rec::kStepBegin) {
      end_.last_step_begun = std::max(end_.last_step_begun.value_or(r.step()), r.step());
    } else if (type == trace::rec::kStep) {
      end_.last_step_done = std::max(end_.last_step_done.value_or(r.step()), r.step());
    } else if (type == trace::rec::kPhase) {
      if (auto name = r.Str("name")) end_.last_phase = std::string(*name);
    } else if (type == trace::rec::kEnd) {
      end_.end_seen = true;
      end_.reason = std::string(r.Str("reason").value_or(""));
      end_.status = r.Int("status");
      end_.end_step = r.step();
      if (auto signal = r.Str("signal")) {
        end_.detail = std::string(*signal);
      } else if (auto error = r.Str("error")) {
        end_.detail = std::string(*error);
      }
    }
  }

  const RankInfo* info_;
  std::unique_ptr<trace::TraceReader> reader_;
  trace::Record record_;
  bool pending_ = false;
  bool ended_ = false;
  RankEnd end_;
};

class Dispatch {
 public:
  explicit Dispatch(const std::vector<std::unique_ptr<Analyzer>>& analyzers) : all_(analyzers) {
    for (const auto& a : analyzers)
      if (a->wants_records()) record_takers_.push_back(a.get());
  }

  void Record(const RankInfo& rank, const trace::Record& record) const {
    for (Analyzer* a : record_takers_) a->OnRecord(rank, record);
  }
  void RankEnded(const RankInfo& rank, const RankEnd& end) const {
    for (const auto& a : all_) a->OnRankEnd(rank, end);
  }
  void StepDone(int64_t step) const {
    for (const auto& a : all_) a->OnStepDone(step);
  }

 private:
  const std::vector<std::unique_ptr<Analyzer>>& all_;
  std::vector<Analyzer*> record_takers_;
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
  if (result.lockstep) {
    DriveLockstep(&streams, dispatch, options, &result);
  } else {
    DrivePerRank(&streams, dispatch, options, &result);
  }
  return result;
}

}  // namespace dsdiag::analyzers
