// The rank-died verdicts, each a function of the run as DeathView shows it once every rank
// has ended: silent_deaths.cc for ranks that said nothing, announced_ends.cc for those that
// said why they stopped (fatal_signal.cc for those that crashed on a fatal signal).
#pragma once

#include <vector>

#include "analyzers/framework/finding.h"
#include "analyzers/kinds/rank_died/death_view.h"

namespace dsdiag::analyzers::rank_died {

// silent_deaths.cc
Finding MissingRanks(const RunContext& run);  // ranks below world_size without a trace
void ReportSilentDeaths(const DeathView& view, std::vector<Finding>* out);
void ReportCutShort(const DeathView& view, std::vector<Finding>* out);

// announced_ends.cc
// Ranks that stopped without a word (or left no trace): when one did, a polite stop
// signal on another rank is the launcher tearing the job down after it, not a cause.
std::vector<int> SilentlyDead(const DeathView& view);
// A rank that said why it stopped: an `end` with a signal or an error, or a recorded
// signal before it was killed.
// The ranks that failed on an error of their own (an `end` with reason error that is not a
// lost peer's, or a fatal signal: a crash): a stop signal on another rank after them is the
// launcher tearing the job down (dsdiag run, torchrun), not a cause.
std::vector<int> FailedOnError(const DeathView& view);
Finding Announced(const DeathView& view, const RankState& s, const std::vector<int>& silently_dead,
                  const std::vector<int>& failed_on_error);
Finding OddEnd(const DeathView& view, const RankState& s);
// Ranks that stopped because another failed: information when the failure is reported
// here, a warning when nothing in the run explains it.
void ReportPeerFailures(const DeathView& view, std::vector<Finding>* out);

// fatal_signal.cc
// A rank that crashed on a fatal signal: its summary, hint and evidence (signal, died_by,
// fault) on a finding Announced started.
void DescribeFatalSignal(const DeathView& view, const RankState& s, Finding* f);

// When many ranks ended alike (the survivors of a 1,024-rank hang all time out in the same
// collective), one finding says so instead of one per rank.
void GroupAlike(std::vector<Finding> findings, std::vector<Finding>* out);

}  // namespace dsdiag::analyzers::rank_died
