#include "timeline/run_scan.h"

#include <algorithm>

#include "analyzers/input_error.h"
#include "timeline/rank_events.h"
#include "trace/record_types.h"
#include "trace/trace_reader.h"

namespace dsdiag::timeline {
namespace {

namespace rec = trace::rec;

class RankScanner {
 public:
  RankScanner(const analyzers::RankInfo& info, const Selection& selection,
              const std::set<RankStep>& wanted, RunScan* out, RankScan* rank)
      : info_(info),
        selection_(selection),
        wanted_(wanted),
        selected_(selection.ranks.Contains(info.rank)),
        out_(out),
        rank_(rank),
        clock_(info.header.clock) {
    rank_->clock = trace::OffsetHistory(info.header.clock);
  }

  void Run() {
    std::string error;
    auto reader = trace::TraceReader::Open(info_.path, &error);
    if (!reader) throw analyzers::RunInputError(error);
    trace::Record r;
    while (reader->Next(&r)) OnRecord(r);
  }

 private:
  void OnRecord(const trace::Record& r) {
    if (r.type() == rec::kClock) {
      clock_.Refine(r);
      rank_->clock.Add(r);
      return;
    }
    if (!selection_.steps.Contains(r.step())) return;
    const int64_t t = clock_.ToRank0(r.ts());
    if (r.type() == rec::kCollective) {
      auto pg = r.Int("pg");
      auto seq = r.Int("seq");
      if (pg && seq) out_->collectives.Add(*pg, *seq, t, info_.rank);
    } else if (r.type() == rec::kStepBegin && wanted_.count({info_.rank, r.step()})) {
      out_->step_begins.emplace(RankStep{info_.rank, r.step()}, t);
    }
    if (selected_ && MakesEvent(r.type())) {
      rank_->first_ns = std::min(rank_->first_ns.value_or(t), t);
      out_->earliest = std::min(out_->earliest.value_or(t), t);
    }
  }

  const analyzers::RankInfo& info_;
  const Selection& selection_;
  const std::set<RankStep>& wanted_;
  const bool selected_;
  RunScan* out_;
  RankScan* rank_;
  trace::RankClock clock_;
};

}  // namespace

RunScan ScanRun(const analyzers::RunContext& run, const Selection& selection,
                const std::set<RankStep>& wanted_step_begins, const ScanProgress& progress) {
  RunScan scan;
  scan.ranks.resize(run.ranks.size());
  const int total = static_cast<int>(run.ranks.size());
  for (int i = 0; i < total; ++i) {
    RankScanner(run.ranks[i], selection, wanted_step_begins, &scan, &scan.ranks[i]).Run();
    if (progress) progress(i + 1, total);
  }
  return scan;
}

}  // namespace dsdiag::timeline
