// The unsplit-data follow-on pass: a DataLoader with shuffle=True draws its permutation from
// the global torch generator (`torch-cpu`) at each pass; with one seed on every rank and no
// DistributedSampler the ranks draw the same permutation, so that stream's rng-collision is
// what the identical batches look like from the RNG side. Where shard-overlap found the
// ranks training on identical batches (basis kIdenticalBatchesBasis), the cross-rank
// rng-collision on `torch-cpu` becomes an info follow-on of it; the data finding stays the
// error on screen. Collisions of other streams, and within a rank's loader workers, stay.
#include <memory>
#include <string>
#include <vector>

#include "analyzers/framework/finding_kinds.h"
#include "analyzers/framework/findings_pass.h"
#include "analyzers/kinds/common/identical_batches.h"
#include "analyzers/passes/follow_on.h"

namespace dsdiag::analyzers {
namespace {

constexpr std::string_view kSamplerStream = "torch-cpu";

bool IsUnsplitData(const Finding& f) {
  if (f.kind != kind::kShardOverlap || f.severity != Severity::kError) return false;
  const trace::JsonValue* basis = f.evidence.Find("basis");
  return basis && basis->kind() == trace::JsonValue::Kind::kString &&
         basis->as_string() == kIdenticalBatchesBasis;
}

bool IsSamplerStreamCollision(const Finding& f) {
  return f.kind == kind::kRngCollision && f.severity != Severity::kInfo &&
         f.subject.value_or("") == kSamplerStream && !f.evidence.Find("scope");
}

class UnsplitDataFollowOnPass : public FindingsPass {
 public:
  std::string_view name() const override { return "unsplit-data-follow-on"; }

  void Apply(const RunContext&, std::vector<Finding>* findings) const override {
    const Finding* cause = nullptr;
    for (const Finding& f : *findings)
      if (IsUnsplitData(f)) cause = &f;
    if (!cause) return;
    const follow_on::Cause c{cause->kind, cause->subject.value_or(""), cause->ranks};
    for (Finding& f : *findings) {
      if (!IsSamplerStreamCollision(f)) continue;
      follow_on::MarkFollowOn(
          c, "a follow-on of the shard-overlap: the ranks trained on identical batches",
          "A consequence, not the cause: DataLoader(shuffle=True) draws its permutation from "
          "this stream, the same on every rank that seeded it alike. Read the shard-overlap "
          "finding (no DistributedSampler). Once the data is split, a collision that remains "
          "here is dropout or noise drawn alike on every rank.",
          &f);
    }
  }
};

}  // namespace

std::unique_ptr<FindingsPass> CreateUnsplitDataFollowOnPass() {
  return std::make_unique<UnsplitDataFollowOnPass>();
}

}  // namespace dsdiag::analyzers
