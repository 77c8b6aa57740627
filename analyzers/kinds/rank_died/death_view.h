// DeathView: the run as the rank-died verdicts see it once every rank has ended — each
// rank's fate and records, and the flight dumps of the run loader — with the questions they
// ask of it (where a rank stopped, what it was waiting in) and the evidence every per-rank
// finding starts from (Base).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "analyzers/framework/finding.h"
#include "analyzers/kinds/rank_died/rank_fate.h"

namespace dsdiag::analyzers::rank_died {

class DeathView {
 public:
  DeathView(const RunContext& run, std::vector<RankState> ranks)
      : run_(&run), ranks_(std::move(ranks)) {}

  const RunContext& run() const { return *run_; }
  const std::vector<RankState>& ranks() const { return ranks_; }
  // The state of `rank`, or null when it was not analysed.
  const RankState* Find(int rank) const {
    for (const RankState& s : ranks_)
      if (s.rank == rank) return &s;
    return nullptr;
  }

  // The rank's flight dump, when the run loader found a usable one, and its file name.
  const trace::FlightDump* Dump(int rank) const;
  std::string DumpFileName(int rank) const;
  // The dump when it was written after the rank's last step, phase or collective record:
  // it then says where the rank stopped. An older one (a SIGUSR1 request mid-run) does not.
  const trace::FlightDump* LastWord(const RankState& s) const;
  // The phase the rank stopped in, when its last-word dump names one of the step it was in.
  std::string StoppedPhase(const RankState& s) const;
  // "in sync of step 3" when the phase is known, else "during step 3".
  std::string WhereText(const RankState& s) const;
  // The collective the rank was left waiting in (its last-word dump, else its error).
  std::optional<WaitingIn> Waiting(const RankState& s) const;
  // The furthest step any rank other than `rank` began.
  std::optional<int64_t> PeersMaxStep(int rank) const;

  // A finding about rank `s` with the evidence every per-rank finding carries.
  Finding Base(const RankState& s, Severity severity) const;
  // What the other ranks saw when `dead_rank` died: how each ended, with what message, and
  // what it was waiting in. Up to kMaxListed.
  trace::JsonValue SurvivorsView(int dead_rank) const;

 private:
  const RunContext* run_;
  std::vector<RankState> ranks_;  // by rank
};

}  // namespace dsdiag::analyzers::rank_died
