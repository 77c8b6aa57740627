#include "probes/peer_op.h"

#include <utility>

#include "probes/probe_timer.h"
#include "probes/records/p2p_record.h"
#include "trace/clock.h"

namespace dsdiag::probes {

PeerOp::PeerOp(CollectiveProbe* probe, PeerMessage message, SourceLocation where) noexcept
    : probe_(probe), m_(std::move(message)) {
  if (m_.peer >= 0) seq_ = probe_->TakePairSeq(m_.pg, sends(), m_.peer, m_.match_tag);
  Session* s = probe_->session_;
  if (!s->on()) return;
  ProbeTimer timer(s);
  enter_ns_ = trace::MonotonicNs();
  if (m_.what.site == 0) m_.what.site = probe_->SiteId(where);
  if (probe_->recorder_)
    handle_ = probe_->recorder_->IssueP2P(m_, seq_, s->current_step(), s->current_phase());
}

void PeerOp::SetPeer(int64_t peer, int64_t group_peer) noexcept {
  if (m_.peer >= 0 || peer < 0) return;  // numbered already, or still unknown
  m_.peer = peer;
  m_.group_peer = group_peer;
  seq_ = probe_->TakePairSeq(m_.pg, sends(), peer, m_.match_tag);
  if (!probe_->session_->on()) return;
  ProbeTimer timer(probe_->session_);
  if (handle_) probe_->recorder_->SetPeer(handle_, peer, group_peer, seq_);
}

void PeerOp::Waiting() noexcept {
  if (!probe_->session_->on() || completed()) return;
  ProbeTimer timer(probe_->session_);
  if (handle_) probe_->recorder_->Start(handle_);
}

void PeerOp::Completed(bool failed) noexcept {
  if (!probe_->session_->on()) return;
  ProbeTimer timer(probe_->session_);
  if (handle_ && !failed) probe_->recorder_->Complete(handle_);
  end_.Set(failed);
}

void PeerOp::Write() noexcept {
  Session* s = probe_->session_;
  if (!s->on() || written_) return;
  written_ = true;
  ProbeTimer timer(s);
  const auto [done, failed] = end_.Get();
  records::WriteP2P(s, {&m_, seq_, enter_ns_, done, failed});
}

}  // namespace dsdiag::probes
