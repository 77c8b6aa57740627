// Analyzer: one family of diagnoses over a run. Every analyzer sees the same stream:
//
//   Begin(run)                      headers, ranks found/missing, excluded files, dumps
//   for each step s, in order:      (the step driver moves every rank forward together)
//     OnRecord(rank, record)        each rank's records with step <= s, rank by rank
//     OnRankEnd(rank, end)          when a rank's file runs out during step s
//     OnStepDone(s)                 every rank has delivered step s
//   Finish(run, &findings)
//
// So an analyzer that compares ranks step by step keeps one step of state per rank, never
// a whole run. Records of a helper thread may arrive a step late (their `step` is lower
// than s); records before a rank's first step_begin carry step 0.
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
