#include "report/run_collector.h"

#include <algorithm>
#include <cmath>

#include "trace/record_types.h"
#include "trace/records/coll_record.h"
#include "trace/records/scaler_record.h"
#include "trace/records/step_record.h"

namespace dsdiag::report {

namespace records = trace::records;

namespace rec = trace::rec;

void RunCollector::Begin(const analyzers::RunContext& run) {
  std::vector<int> ranks = run.ranks_found;
  std::sort(ranks.begin(), ranks.end());
  rows_ = RankRows(ranks, kMaxHeatmapRows);
  const int n = static_cast<int>(ranks.size());
  index_of_rank_.assign(ranks.empty() ? 0 : ranks.back() + 1, -1);
  for (int i = 0; i < n; ++i) index_of_rank_[ranks[i]] = i;
  clocks_.assign(n, trace::RankClock());
  for (const analyzers::RankInfo& r : run.ranks) {
    const int i = IndexOf(r.rank);
    if (i >= 0) clocks_[i] = trace::RankClock(r.header.clock);
  }
  waits_ = std::make_unique<CollectiveWaits>(n, max_held_enters_);
  wait_ = std::make_unique<BinnedRows>(&axis_, rows_.rows());
  delay_ = std::make_unique<BinnedRows>(&axis_, rows_.rows());
  coll_time_ = std::make_unique<BinnedRows>(&axis_, rows_.rows());
  coll_time_open_.assign(n, CollTime());
  rank_steps_.assign(n, RankSteps());
  loss_ = std::make_unique<Curves>(&axis_, RankRows(ranks, kMaxCurveLines));
  scale_ = std::make_unique<Curves>(&axis_, RankRows(ranks, kMaxCurveLines));
  config_ = DiffConfigs(run.ranks);
}

int RunCollector::IndexOf(int rank) const {
  return rank >= 0 && rank < static_cast<int>(index_of_rank_.size()) ? index_of_rank_[rank] : -1;
}

void RunCollector::OnRecord(const analyzers::RankInfo& rank, const trace::Record& r) {
  const int index = IndexOf(rank.rank);
  if (index < 0) return;
  const std::string_view type = r.type();
  if (type == rec::kCollective) {
    OnCollective(index, r);
  } else if (type == rec::kStep) {
    OnStep(index, r);
  } else if (type == rec::kScaler) {
    const auto scale = records::ScalerView(r).scale();
    if (scale && std::isfinite(*scale)) {
      scale_->by_line.Add(scale_->lines.RowOf(index), r.step(), *scale, rank.rank);
      scale_->all.Add(0, r.step(), *scale, rank.rank);
    }
  } else if (type == rec::kClock) {
    clocks_[index].Refine(r);
  }
}

void RunCollector::OnCollective(int index, const trace::Record& r) {
  const records::CollView coll(r);
  const auto pg = coll.pg();
  const auto seq = coll.seq();
  const int64_t dur = std::max<int64_t>(coll.dur().value_or(0), 0);
  if (pg && seq) waits_->Add(index, r.step(), *pg, *seq, clocks_[index].ToRank0(r.ts()), dur);
  CollTime& open = coll_time_open_[index];
  if (open.step != r.step()) {
    FlushCollTime(index);
    open.step = r.step();
  }
  open.ns += dur;
}

void RunCollector::FlushCollTime(int index) {
  CollTime& open = coll_time_open_[index];
  if (open.step >= 0)
    coll_time_->Add(rows_.RowOf(index), open.step, static_cast<double>(open.ns),
                    rows_.ranks()[index]);
  open = CollTime();
}

void RunCollector::OnStep(int index, const trace::Record& r) {
  const int rank = rows_.ranks()[index];
  const auto loss = records::StepView(r).loss();
  if (loss && std::isfinite(*loss)) {
    loss_->by_line.Add(loss_->lines.RowOf(index), r.step(), *loss, rank);
    loss_->all.Add(0, r.step(), *loss, rank);
  }
  const auto dur = records::StepView(r).dur();
  if (!dur || *dur < 0) return;
  RankSteps& steps = rank_steps_[index];
  ++steps.steps;
  steps.dur_ns += static_cast<double>(*dur);
  const records::StepView step(r);
  if (const auto probe_ns = step.probe_ns(); probe_ns && *probe_ns >= 0) {
    steps.probe_ns += static_cast<double>(*probe_ns);
    steps.probe_step_ns += static_cast<double>(*dur);
  }
  if (!step.phases(&phase_members_)) return;  // reused: no allocation per step
  for (const trace::Record::NumberMember& field : phase_members_) {
    const double ns = field.value;
    if (!field.is_number || !std::isfinite(ns) || ns < 0) continue;
    const size_t p = static_cast<size_t>(PhaseIndex(field.name));
    if (steps.phase_ns.size() <= p) steps.phase_ns.resize(p + 1);
    steps.phase_ns[p] += ns;
  }
}

int RunCollector::PhaseIndex(std::string_view name) {
  for (size_t i = 0; i < phases_.size(); ++i)
    if (phases_[i] == name) return static_cast<int>(i);
  if (static_cast<int>(phases_.size()) < kMaxPhases - 1) {
    phases_.emplace_back(name);
    return static_cast<int>(phases_.size()) - 1;
  }
  // The last slot collects every name beyond the cap.
  if (static_cast<int>(phases_.size()) == kMaxPhases - 1) phases_.emplace_back("other");
  return kMaxPhases - 1;
}

void RunCollector::OnRankEnd(const analyzers::RankInfo& rank, const analyzers::RankEnd&) {
  const int index = IndexOf(rank.rank);
  if (index >= 0) FlushCollTime(index);
}

CollectiveWaits::Sink RunCollector::WaitSink() {
  return [this](int index, int64_t step, int64_t wait, int64_t delay) {
    const int row = rows_.RowOf(index);
    const int rank = rows_.ranks()[index];
    wait_->Add(row, step, static_cast<double>(wait), rank);
    delay_->Add(row, step, static_cast<double>(delay), rank);
  };
}

void RunCollector::OnStepDone(int64_t step) {
  waits_->StepDone(step, WaitSink());
  if (progress_) progress_(step);
}

void RunCollector::Finish(const analyzers::RunContext&, std::vector<analyzers::Finding>*) {
  waits_->Finish(WaitSink());
  for (size_t i = 0; i < coll_time_open_.size(); ++i) FlushCollTime(static_cast<int>(i));
}

}  // namespace dsdiag::report
