#include "probes/collective_probe.h"

#include <cstdio>
#include <exception>

#include "probes/nvtx.h"
#include "probes/probe_timer.h"
#include "trace/clock.h"
#include "trace/record_types.h"

namespace dsdiag::probes {

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
  // "allreduce seq 17 grad-bucket-2": the same key the analyzers align ranks on.
  char name[96];
  std::snprintf(name, sizeof name, "%.*s seq %lld %.*s", static_cast<int>(op_.size()), op_.data(),
                static_cast<long long>(seq_), static_cast<int>(tag_.size()), tag_.data());
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
  const int64_t now = trace::MonotonicNs();
  const int64_t dur = now - enter_ns_;
  s->CountCollective(bytes_, dur, started_ns_ ? now - started_ns_ : dur);
  auto r = s->writer()->BeginAt(trace::rec::kCollective, enter_ns_);
  auto& l = r.line();
  l.Field("pg", pg_)
      .Field("seq", seq_)
      .Field("op", op_)
      .Field("dtype", dtype_)
      .Field("n", count_)
      .Field("bytes", bytes_)
      .Field("dur", dur)
      .Field("tag", tag_);
  if (failed) l.Field("failed", true);
}

}  // namespace dsdiag::probes
