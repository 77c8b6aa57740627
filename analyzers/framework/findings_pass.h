// FindingsPass: a rule over the findings of every analyzer, applied once they have all
// finished. Analyzers run independently and never see each other's findings; a relation
// between two kinds ("these ranks timed out only because of that hang") is decided here,
// in one place, rather than by coupling two analyzers:
//
//   every analyzer's Finish  ->  each pass's Apply, in CreateAllFindingsPasses() order
//                            ->  sort (finding.h)
//
// A pass may change a finding's severity, summary, evidence and hint; it never changes its
// kind, ranks or step, and it adds or drops no finding: what each analyzer found is still
// in the output, only ranked as what it is.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "analyzers/framework/finding.h"
#include "analyzers/framework/run_context.h"

namespace dsdiag::analyzers {

class FindingsPass {
 public:
  virtual ~FindingsPass() = default;
  virtual std::string_view name() const = 0;
  virtual void Apply(const RunContext& run, std::vector<Finding>* findings) const = 0;
};

// rank-died and hang findings of a collective mismatch's failure become info follow-ons of
// the mismatch (passes/mismatch_follow_on_pass.cc).
std::unique_ptr<FindingsPass> CreateMismatchFollowOnPass();
// rank-died findings of ranks left waiting in a hang's collective become info follow-ons
// of the hang finding (passes/hang_follow_on_pass.cc).
std::unique_ptr<FindingsPass> CreateHangFollowOnPass();
// replica-divergence after a grad-desync, scaler-desync or checkpoint-mismatch becomes an
// info follow-on of it (passes/divergence_follow_on_pass.cc).
std::unique_ptr<FindingsPass> CreateDivergenceFollowOnPass();
// rng-collision on the global torch stream, where the ranks trained on identical batches
// of an unsplit dataset, becomes an info follow-on of that shard-overlap
// (passes/unsplit_data_follow_on_pass.cc).
std::unique_ptr<FindingsPass> CreateUnsplitDataFollowOnPass();

// Every pass, in the order RunCompare applies them (registry.cc).
std::vector<std::unique_ptr<FindingsPass>> CreateAllFindingsPasses();

}  // namespace dsdiag::analyzers
