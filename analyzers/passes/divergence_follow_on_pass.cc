// The divergence follow-on pass: replicas that drift apart after a gradient desync, a
// scaler desync or a checkpoint mismatch drift because of it — the gradients, the decision
// to step, or the parameters resumed from differed, so the updates did. The replica-divergence
// finding at or after such a finding's step becomes an `info` follow-on of it (the earliest cause),
// with the cause in its evidence; the cause stays the error on screen.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analyzers/framework/finding_kinds.h"
#include "analyzers/framework/findings_pass.h"
#include "analyzers/passes/follow_on.h"

namespace dsdiag::analyzers {
namespace {

bool IsDesync(const Finding& f) {
  return (f.kind == kind::kGradDesync || f.kind == kind::kScalerDesync ||
          f.kind == kind::kCheckpointMismatch) &&
         f.severity == Severity::kError && f.step;
}

// What differed across ranks, so that the updates (or the parameters) did.
std::string WhatDiffered(const std::string& kind) {
  if (kind == kind::kGradDesync) return "gradients";
  if (kind == kind::kScalerDesync) return "scaler decisions";
  return "parameters the ranks resumed from";
}

class DivergenceFollowOnPass : public FindingsPass {
 public:
  std::string_view name() const override { return "divergence-follow-on"; }

  void Apply(const RunContext&, std::vector<Finding>* findings) const override {
    const Finding* cause = nullptr;
    for (const Finding& f : *findings)
      if (IsDesync(f) && (!cause || *f.step < *cause->step)) cause = &f;
    if (!cause) return;
    const follow_on::Cause c{cause->kind, cause->subject.value_or(""), cause->ranks};
    const int64_t step = *cause->step;
    for (Finding& f : *findings) {
      if (f.kind != kind::kReplicaDivergence || f.severity == Severity::kInfo || !f.step ||
          *f.step < step)
        continue;
      follow_on::MarkFollowOn(
          c,
          "a follow-on of the " + c.kind + " at step " + std::to_string(step) + " (" +
              (c.culprits.size() == 1 ? "rank " : "ranks ") + FormatRankRanges(c.culprits) + ")",
          "A consequence, not a cause: the replicas' updates differed from step " +
              std::to_string(step) + " because the " + WhatDiffered(c.kind) + " did. Read the " +
              c.kind + " finding.",
          &f);
    }
  }
};

}  // namespace

std::unique_ptr<FindingsPass> CreateDivergenceFollowOnPass() {
  return std::make_unique<DivergenceFollowOnPass>();
}

}  // namespace dsdiag::analyzers
