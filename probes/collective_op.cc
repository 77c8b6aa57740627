#include "probes/collective_op.h"

#include <utility>

#include "probes/nvtx.h"
#include "probes/probe_timer.h"

namespace dsdiag::probes {

// The flight entry copies the counts from the argument, before the op keeps them.
CollectiveOp::CollectiveOp(CollectiveProbe* probe, int pg, trace::Collective what,
                           trace::PeerCounts counts, SourceLocation where) noexcept
    : IssuedCollective(probe, pg, std::move(what), where, counts.empty() ? nullptr : &counts),
      counts_(std::move(counts)) {
  if (!on()) return;
  char name[kNvtxNameSize];
  NvtxName(what_.op, seq_, what_.tag, name);
  nvtx_range_ = nvtx::StartRange(name);
}

void CollectiveOp::Completed(bool failed) noexcept {
  if (!on()) return;
  ProbeTimer timer(session());
  CompleteEntry(failed);
  nvtx::EndRange(nvtx_range_);  // on the thread that saw it end
  end_.Set(failed);
}

void CollectiveOp::QueuedOnDevice() noexcept {
  if (!on()) return;
  ProbeTimer timer(session());
  nvtx::EndRange(nvtx_range_);
  end_.Set(false);
}

void CollectiveOp::DeviceCompleted() noexcept {
  if (!on()) return;
  ProbeTimer timer(session());
  CompleteEntry(false);
}

void CollectiveOp::Write() noexcept {
  if (!on() || written_) return;
  written_ = true;
  ProbeTimer timer(session());
  const auto [done, failed] = end_.Get();
  WriteRecord(done, failed, &counts_);
}

}  // namespace dsdiag::probes
