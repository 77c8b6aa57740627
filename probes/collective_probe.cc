#include "probes/collective_probe.h"

#include <cstdio>
#include <exception>
#include <string>
#include <utility>

#include "probes/nvtx.h"
#include "probes/probe_timer.h"
#include "probes/records/collective_record.h"
#include "probes/records/write_record.h"
#include "trace/clock.h"
#include "trace/records/site_record.h"

namespace dsdiag::probes {

void NvtxName(std::string_view op, int64_t seq, std::string_view tag,
              char (&out)[kNvtxNameSize]) noexcept {
  std::snprintf(out, sizeof out, "%.*s seq %lld %.*s", static_cast<int>(op.size()), op.data(),
                static_cast<long long>(seq), static_cast<int>(tag.size()), tag.data());
}

CollectiveProbe::CollectiveProbe(Session* session, FlightRecorder* recorder) noexcept
    : session_(session), recorder_(recorder) {
  for (auto& pg : slot_pg_) pg.store(kFreeSlot, std::memory_order_relaxed);
}

int64_t CollectiveProbe::next_seq(int pg) const noexcept {
  for (int i = 0; i < kMaxGroups; ++i)
    if (slot_pg_[i].load(std::memory_order_acquire) == pg) return seq_[i];
  return 0;  // no op on it yet
}

int CollectiveProbe::Slot(int pg) noexcept {
  for (int i = 0; i < kMaxGroups; ++i) {
    const int held = slot_pg_[i].load(std::memory_order_acquire);
    if (held == pg) return i;
    if (held == kFreeSlot) break;
  }
  std::lock_guard<std::mutex> lock(slot_mu_);
  for (int i = 0; i < kMaxGroups; ++i) {
    const int held = slot_pg_[i].load(std::memory_order_relaxed);
    if (held == pg) return i;
    if (held == kFreeSlot) {
      slot_pg_[i].store(pg, std::memory_order_release);
      return i;
    }
  }
  return kMaxGroups - 1;
}

int64_t CollectiveProbe::TakePairSeq(int pg, bool send, int64_t peer, int64_t match_tag) noexcept {
  std::lock_guard<std::mutex> lock(pair_mu_);
  try {
    return pair_seq_[{pg, send, peer, match_tag}]++;
  } catch (const std::exception&) {  // out of memory for a new pair: unnumbered
    return -1;
  }
}

int64_t CollectiveProbe::Announce(CallSites::Id id, std::string_view file, int64_t line,
                                  std::string_view fn) noexcept {
  if (!id.fresh) return id.id;
  records::WriteRecord(session_, trace::records::SiteRecord{id.id, file, line, fn});
  if (recorder_) recorder_->AddSite(id.id, file, line, fn);
  return id.id;
}

int64_t CollectiveProbe::SiteId(SourceLocation where) noexcept {
  if (!session_->on()) return 0;
  return Announce(sites_.Of(where), where.file ? where.file : "", where.line,
                  where.fn ? where.fn : "");
}

int64_t CollectiveProbe::SiteId(std::string_view file, int64_t line, std::string_view fn) noexcept {
  if (!session_->on()) return 0;
  return Announce(sites_.Of(file, line, fn), file, line, fn);
}

IssuedCollective::IssuedCollective(CollectiveProbe* probe, int pg, trace::Collective what,
                                   SourceLocation where, const trace::PeerCounts* counts) noexcept
    : probe_(probe), pg_(pg), seq_(probe->seq_[probe->Slot(pg)]++), what_(std::move(what)) {
  Session* s = probe_->session_;
  if (!s->on()) return;
  ProbeTimer timer(s);
  enter_ns_ = trace::MonotonicNs();
  if (what_.site == 0) what_.site = probe_->SiteId(where);
  if (probe_->recorder_)
    handle_ =
        probe_->recorder_->Issue(pg_, seq_, what_, s->current_step(), s->current_phase(), counts);
}

bool IssuedCollective::on() const noexcept { return probe_->session_->on(); }
Session* IssuedCollective::session() const noexcept { return probe_->session_; }

void IssuedCollective::Started() noexcept {
  if (!on()) return;
  ProbeTimer timer(session());
  started_ns_ = trace::MonotonicNs();
  if (handle_) probe_->recorder_->Start(handle_);
}

void IssuedCollective::CompleteEntry(bool failed) noexcept {
  if (handle_ && !failed) probe_->recorder_->Complete(handle_);
}

void IssuedCollective::WriteRecord(int64_t done_ns, bool failed,
                                   const trace::PeerCounts* counts) noexcept {
  records::WriteCollective(probe_->session_,
                           {pg_, seq_, &what_, enter_ns_, started_ns_, done_ns, failed, counts});
}

CollectiveScope::CollectiveScope(CollectiveProbe* probe, int pg, trace::Collective what,
                                 SourceLocation where) noexcept
    : IssuedCollective(probe, pg, std::move(what), where),
      exceptions_at_entry_(std::uncaught_exceptions()) {
  if (!on()) return;
  ProbeTimer timer(session());
  char name[kNvtxNameSize];
  NvtxName(what_.op, seq_, what_.tag, name);
  nvtx::PushRange(name);
}

CollectiveScope::CollectiveScope(CollectiveProbe* probe, int pg, std::string_view op,
                                 std::string_view dtype, int64_t count, int64_t bytes,
                                 std::string_view tag, SourceLocation where) noexcept
    : CollectiveScope(
          probe, pg,
          trace::Collective{std::string(op), std::string(dtype), count, bytes, std::string(tag)},
          where) {}

// Left by an exception (the backend threw: peer gone, timeout, size mismatch), the op did
// not complete: its flight entry stays pending and its record says "failed", so that a hang
// or crash analysis sees where the rank really was.
CollectiveScope::~CollectiveScope() {
  if (!on()) return;
  ProbeTimer timer(session());
  const bool failed = std::uncaught_exceptions() > exceptions_at_entry_;
  CompleteEntry(failed);
  nvtx::PopRange();
  WriteRecord(trace::MonotonicNs(), failed, nullptr);
}

}  // namespace dsdiag::probes
