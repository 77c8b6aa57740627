// RunCollector: the analyzer that gathers what the report draws, in the same single
// streaming pass as the findings (it runs next to `dsdiag compare`'s analyzers).
//
// Records it reads (docs/trace-format.md):
//   step    dur, phases (mean per rank: the phase bars), loss (the loss curves),
//           probe_ns (the probes' own share of the step, under the phase bars)
//   coll    pg, seq, ts (enter), dur: collective waits and arrival delays per rank and
//           step (collective_waits.h), and the rank-local time in collectives
//   scaler  scale (the loss-scale curves)
//   clock   offset: maps later `ts` to rank 0's clock (trace/rank_clock.h)
//
// Everything per step goes into step bins (step_bins.h) on rows of ranks (rank_rows.h):
// memory is O(rows x bins + ranks), whatever the number of steps.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "analyzers/framework/analyzer.h"
#include "report/collective_waits.h"
#include "report/config_diff.h"
#include "report/rank_rows.h"
#include "report/step_bins.h"
#include "trace/rank_clock.h"

namespace dsdiag::report {

inline constexpr int kMaxHeatmapRows = 128;
inline constexpr int kMaxCurveLines = 16;
inline constexpr int kMaxPhases = 12;  // more distinct phase names go to "other"

// Per rank: its `step` records summed (the phase bars show the means).
struct RankSteps {
  int64_t steps = 0;             // step records with a dur
  double dur_ns = 0;             // summed
  std::vector<double> phase_ns;  // summed, by phase index (RunCollector::phases())
  // The probes' own time (`probe_ns`) and the dur of the step records that carry it.
  double probe_ns = 0;
  double probe_step_ns = 0;
};

// Curves of one per-step value (loss, loss scale): lines of ranks plus the envelope of all.
struct Curves {
  Curves(StepAxis* axis, RankRows lines_of)
      : lines(std::move(lines_of)), by_line(axis, lines.rows()), all(axis, 1) {}
  RankRows lines;
  BinnedRows by_line;  // row = line
  BinnedRows all;      // one row: min/max/mean over every rank
};

class RunCollector : public analyzers::Analyzer {
 public:
  // Called at each step every rank has delivered (see analyzer.h), for progress lines.
  using StepProgress = std::function<void(int64_t step)>;
  explicit RunCollector(StepProgress progress = nullptr,
                        size_t max_held_enters = CollectiveWaits::kMaxHeldEnters)
      : progress_(std::move(progress)), max_held_enters_(max_held_enters) {}

  std::string_view name() const override { return "report"; }
  void Begin(const analyzers::RunContext& run) override;
  void OnRecord(const analyzers::RankInfo& rank, const trace::Record& record) override;
  void OnRankEnd(const analyzers::RankInfo& rank, const analyzers::RankEnd& end) override;
  void OnStepDone(int64_t step) override;
  void Finish(const analyzers::RunContext& run, std::vector<analyzers::Finding>* findings) override;

  const StepAxis& axis() const { return axis_; }
  const RankRows& rows() const { return rows_; }
  // Collective wait and arrival delay (ns per step) per row; valid unless waits_abandoned().
  const BinnedRows& wait() const { return *wait_; }
  const BinnedRows& delay() const { return *delay_; }
  bool waits_abandoned() const { return waits_->abandoned(); }
  // Rank-local time spent in collectives (ns per step) per row: needs no other rank.
  const BinnedRows& coll_time() const { return *coll_time_; }
  // Per rank index: collectives with peers, and how many it entered last.
  const std::vector<int64_t>& collectives() const { return waits_->collectives(); }
  const std::vector<int64_t>& entered_last() const { return waits_->entered_last(); }

  const std::vector<std::string>& phases() const { return phases_; }
  const std::vector<RankSteps>& rank_steps() const { return rank_steps_; }
  const Curves& loss() const { return *loss_; }
  const Curves& scale() const { return *scale_; }
  const ConfigDiff& config() const { return config_; }

 private:
  struct CollTime {  // the step being summed on one rank
    int64_t step = -1;
    int64_t ns = 0;
  };
  int IndexOf(int rank) const;
  void OnCollective(int index, const trace::Record& r);
  void OnStep(int index, const trace::Record& r);
  int PhaseIndex(std::string_view name);
  void FlushCollTime(int index);
  CollectiveWaits::Sink WaitSink();

  StepProgress progress_;
  size_t max_held_enters_;
  StepAxis axis_;
  RankRows rows_;
  std::vector<int> index_of_rank_;  // rank number -> index, -1 when not analysed
  std::vector<trace::RankClock> clocks_;
  std::unique_ptr<CollectiveWaits> waits_;
  std::unique_ptr<BinnedRows> wait_, delay_, coll_time_;
  std::vector<CollTime> coll_time_open_;
  std::vector<std::string> phases_;
  std::vector<RankSteps> rank_steps_;
  std::unique_ptr<Curves> loss_, scale_;
  ConfigDiff config_;
  std::vector<trace::Record::NumberMember> phase_members_;  // OnStep's scratch
};

}  // namespace dsdiag::report
