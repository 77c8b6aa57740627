#include "probes/collective_probe.h"

#include <cstdio>
#include <exception>

#include "probes/nvtx.h"
#include "probes/probe_timer.h"
#include "probes/records/collective_record.h"
#include "trace/clock.h"

namespace dsdiag::probes {

void NvtxName(std::string_view op, int64_t seq, std::string_view tag,
              char (&out)[kNvtxNameSize]) noexcept {
  std::snprintf(out, sizeof out, "%.*s seq %lld %.*s", static_cast<int>(op.size()), op.data(),
                static_cast<long long>(seq), static_cast<int>(tag.size()), tag.data());
}

int64_t CollectiveProbe::TakePairSeq(int pg, bool send, int64_t peer, int64_t match_tag) noexcept {
  std::lock_guard<std::mutex> lock(pair_mu_);
  try {
    return pair_seq_[{pg, send, peer, match_tag}]++;
  } catch (const std::exception&) {  // out of memory for a new pair: unnumbered
    return -1;
  }
}

CollectiveScope::CollectiveScope(CollectiveProbe* probe, int pg, std::string_view op,
                                 std::string_view dtype, int64_t count, int64_t bytes,
                                 std::string_view tag) noexcept
    : probe_(probe),
      pg_(pg),
      seq_(probe->seq_[CollectiveProbe::Group(pg)]++),
      op_(op),
      dtype_(dtype),
      tag_(tag),
      count_(count),
      bytes_(bytes),
      exceptions_at_entry_(std::uncaught_exceptions()) {
  Session* s = probe_->session_;
  if (!s->on()) return;
  ProbeTimer timer(s);
  enter_ns_ = trace::MonotonicNs();
  char name[kNvtxNameSize];
  NvtxName(op_, seq_, tag_, name);
  nvtx::PushRange(name);
  if (probe_->recorder_)
    handle_ = probe_->recorder_->Issue(pg_, seq_, op_, dtype_, count_, bytes_, tag_,
                                       s->current_step(), s->current_phase());
}

void CollectiveScope::Started() noexcept {
  if (!probe_->session_->on()) return;
  ProbeTimer timer(probe_->session_);
  started_ns_ = trace::MonotonicNs();
  if (handle_) probe_->recorder_->Start(handle_);
}

// Left by an exception (the backend threw: peer gone, timeout, size mismatch), the op did
// not complete: its flight entry stays pending and its record says "failed", so that a hang
// or crash analysis sees where the rank really was.
CollectiveScope::~CollectiveScope() {
  Session* s = probe_->session_;
  if (!s->on()) return;
  ProbeTimer timer(s);
  const bool failed = std::uncaught_exceptions() > exceptions_at_entry_;
  if (handle_ && !failed) probe_->recorder_->Complete(handle_);
  nvtx::PopRange();
  records::WriteCollective(s, {pg_, seq_, op_, dtype_, tag_, count_, bytes_, enter_ns_, started_ns_,
                               trace::MonotonicNs(), failed});
}

}  // namespace dsdiag::probes
