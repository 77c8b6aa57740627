// Analyzer: one family of diagnoses over a run. Every analyzer sees the same stream:
//
//   Begin(run)                      headers, ranks found/missing, excluded files, dumps
//   for each window of steps [s, s+K), in order (step_driver.h; s: the lowest step any
//   rank has left):
//     for each rank, in order:
//       OnRecord(rank, record)      the rank's records with step < s+K, in file order
//       OnRankEnd(rank, end)        when the rank's file runs out in this window
//     OnStepDone(t)                 for each step t of the window that some rank reached
//                                   (a record of step t above all its earlier ones), in order
//   Finish(run, &findings)
//
// K=1 is lockstep: every rank delivers step s, then OnStepDone(s). K comes from a budget of
// rank-steps (K = max(1, 2^17 / ranks)), so an analyzer that keeps state per rank and step
// must free it in OnStepDone: it then holds K steps of every rank, never a whole run. With
// K at least the run's length (a window "whole run") ranks are read one after another.
// Findings must not depend on K. Records of a helper thread may arrive a step late (their
// `step` is lower than the steps already done); records before a rank's first step_begin
// carry step 0.
//
// Concrete analyzers live in anonymous namespaces in their own .cc and are created by the
// factories of analyzer_factories.h, listed once in registry.cc.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "analyzers/framework/finding.h"
#include "analyzers/framework/run_context.h"
#include "trace/trace_reader.h"

namespace dsdiag::analyzers {

class Analyzer {
 public:
  virtual ~Analyzer() = default;

  // A short name for messages and stats (usually the kind it reports).
  virtual std::string_view name() const = 0;
  // False for analyzers that only need headers and rank ends: the driver then skips their
  // OnRecord calls (a virtual call per record per analyzer adds up at scale).
  virtual bool wants_records() const { return true; }
  // The record types (trace/record_types.h) OnRecord does anything with; the driver then
  // calls OnRecord for those only. Empty (the default): every record, including types
  // record_types.h does not list.
  virtual std::vector<std::string_view> record_types() const { return {}; }

  virtual void Begin(const RunContext& /*run*/) {}
  // `record` is valid only during the call.
  virtual void OnRecord(const RankInfo& /*rank*/, const trace::Record& /*record*/) {}
  virtual void OnRankEnd(const RankInfo& /*rank*/, const RankEnd& /*end*/) {}
  virtual void OnStepDone(int64_t /*step*/) {}
  // Appends this analyzer's findings (in any order; RunCompare sorts).
  virtual void Finish(const RunContext& run, std::vector<Finding>* findings) = 0;
};

}  // namespace dsdiag::analyzers
