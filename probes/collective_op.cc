#include "probes/collective_op.h"

#include <utility>

#include "probes/nvtx.h"
#include "probes/probe_timer.h"
#include "probes/records/collective_record.h"
#include "trace/clock.h"

namespace dsdiag::probes {

CollectiveOp::CollectiveOp(CollectiveProbe* probe, int pg, std::string op, std::string dtype,
                           int64_t count, int64_t bytes, std::string tag,
                           trace::PeerCounts counts) noexcept
    : probe_(probe),
      pg_(pg),
      seq_(probe->seq_[CollectiveProbe::Group(pg)]++),
      op_(std::move(op)),
      dtype_(std::move(dtype)),
      tag_(std::move(tag)),
      count_(count),
      bytes_(bytes),
      counts_(std::move(counts)) {
  Session* s = probe_->session_;
  if (!s->on()) return;
  ProbeTimer timer(s);
  enter_ns_ = trace::MonotonicNs();
  if (probe_->recorder_)
    handle_ = probe_->recorder_->Issue(pg_, seq_, op_, dtype_, count_, bytes_, tag_,
                                       s->current_step(), s->current_phase(), &counts_);
  char name[kNvtxNameSize];
  NvtxName(op_, seq_, tag_, name);
  nvtx_range_ = nvtx::StartRange(name);
}

void CollectiveOp::Started() noexcept {
  if (!probe_->session_->on()) return;
  ProbeTimer timer(probe_->session_);
  started_ns_ = trace::MonotonicNs();
  if (handle_) probe_->recorder_->Start(handle_);
}

void CollectiveOp::Completed(bool failed) noexcept {
  if (!probe_->session_->on()) return;
  ProbeTimer timer(probe_->session_);
  if (handle_ && !failed) probe_->recorder_->Complete(handle_);
  nvtx::EndRange(nvtx_range_);  // on the thread that saw it end
  end_.Set(failed);
}

void CollectiveOp::Write() noexcept {
  Session* s = probe_->session_;
  if (!s->on() || written_) return;
  written_ = true;
  ProbeTimer timer(s);
  const auto [done, failed] = end_.Get();
  records::WriteCollective(s, {pg_, seq_, op_, dtype_, tag_, count_, bytes_, enter_ns_, started_ns_,
                               done, failed, &counts_});
}

}  // namespace dsdiag::probes
