// CollectiveProbe: every collective and barrier a rank issues, with a per-process-group
// sequence number — the key the analyzers align ranks on. Each op becomes a `coll` record
// (enter time, duration, op, dtype, element count, bytes, tag), a flight-recorder entry, and
// a count in the step's totals (the `step` record's `coll` object, Session::CountCollective).
// The record is the same in light and full mode: every field is read by an analyzer, the
// timeline or the report (docs/trace-format.md says which, with the bytes it costs).
//
//   dsdiag::probes::CollectiveProbe colls(session, &recorder);
//   {
//     dsdiag::probes::CollectiveScope c(&colls, /*pg=*/0, {"allreduce", "f32", n, 4 * n,
//                                       "grad-bucket-0"});
//     auto work = pg->allreduce(tensors);
//     c.Started();
//     work->wait();
//   }  // completed: `coll` record written
//
// With probes off a scope is one branch; sequence numbers still advance so that a rank's
// numbering never depends on its probe mode.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string_view>
#include <tuple>

#include "probes/call_sites.h"
#include "probes/flight_recorder.h"
#include "probes/session.h"
#include "trace/collective.h"
#include "trace/peer_counts.h"

namespace dsdiag::probes {

// The NVTX range of a collective: "allreduce seq 17 grad-bucket-2", the same key the
// analyzers align ranks on (pushed by CollectiveScope, started and ended by CollectiveOp).
inline constexpr size_t kNvtxNameSize = 96;
void NvtxName(std::string_view op, int64_t seq, std::string_view tag,
              char (&out)[kNvtxNameSize]) noexcept;

class CollectiveProbe {
 public:
  // Groups a rank numbers apart; the ops of any further group share the last one's count.
  // A group's pg is its identity (trace/records/group_record.h: torch's name, a number of
  // up to 2^31), not a small index, so each group gets the first free slot.
  static constexpr int kMaxGroups = 16;
  // `recorder` may be null (no flight recorder).
  CollectiveProbe(Session* session, FlightRecorder* recorder) noexcept;

  // The sequence number the next op on `pg` will get.
  int64_t next_seq(int pg) const noexcept;

  // The next number of a point-to-point message on `pg` to or from global rank `peer` with
  // the job's `match_tag`: counted per pair and direction, never in the group's sequence
  // above, so that rank i's k-th send to j meets j's k-th recv from i (PeerOp). From any
  // thread.
  int64_t TakePairSeq(int pg, bool send, int64_t peer, int64_t match_tag) noexcept;

  // The id of a call site (probes/call_sites.h); its first use writes its `site` record and
  // tells the flight recorder. 0 while the probes are off, or for an unknown location.
  int64_t SiteId(SourceLocation where) noexcept;
  // The same for a site given as text (the Python package: the user's frame).
  int64_t SiteId(std::string_view file, int64_t line, std::string_view fn) noexcept;

 private:
  friend class IssuedCollective;
  friend class PeerOp;
  // The slot of `pg`'s sequence number, taken at its first op (from any thread).
  int Slot(int pg) noexcept;
  // Writes the `site` record of a fresh id and hands the site to the flight recorder.
  int64_t Announce(CallSites::Id id, std::string_view file, int64_t line,
                   std::string_view fn) noexcept;
  CallSites sites_;
  Session* session_;
  FlightRecorder* recorder_;
  static constexpr int kFreeSlot = -1;                // a pg is never negative
  std::array<std::atomic<int>, kMaxGroups> slot_pg_;  // the pg each slot counts
  std::mutex slot_mu_;                                // taking a free slot
  std::array<int64_t, kMaxGroups> seq_{};
  std::mutex pair_mu_;
  std::map<std::tuple<int, bool, int64_t, int64_t>, int64_t> pair_seq_;  // guarded by pair_mu_
};

// What a scope and an op share: the collective, its group and sequence number (taken on
// construction, probes on or off), its flight-recorder entry and its times.
class IssuedCollective {
 public:
  // `counts`: per-peer sizes (an all_to_all with split sizes), or null; copied. `where`: the
  // call site, unless `what.site` names one already.
  IssuedCollective(CollectiveProbe* probe, int pg, trace::Collective what, SourceLocation where,
                   const trace::PeerCounts* counts = nullptr) noexcept;
  IssuedCollective(const IssuedCollective&) = delete;
  IssuedCollective& operator=(const IssuedCollective&) = delete;

  // The backend accepted the op (it is now in flight).
  void Started() noexcept;
  int64_t seq() const noexcept { return seq_; }
  const trace::Collective& what() const noexcept { return what_; }

 protected:
  bool on() const noexcept;
  Session* session() const noexcept;
  // Marks the flight entry completed (unless `failed`: it then stays pending).
  void CompleteEntry(bool failed) noexcept;
  // The `coll` record and step totals; `counts` per-peer sizes or null.
  void WriteRecord(int64_t done_ns, bool failed, const trace::PeerCounts* counts) noexcept;

  CollectiveProbe* probe_;
  int pg_;
  int64_t seq_;
  trace::Collective what_;
  int64_t enter_ns_ = 0;
  int64_t started_ns_ = 0;  // when the backend accepted it; 0 until then
  int64_t handle_ = 0;
};

class CollectiveScope : public IssuedCollective {
 public:
  // `where`: the call site the `coll` record names, by default the caller's line.
  CollectiveScope(CollectiveProbe* probe, int pg, trace::Collective what,
                  SourceLocation where = SourceLocation::Current()) noexcept;
  // The same, spelled out.
  CollectiveScope(CollectiveProbe* probe, int pg, std::string_view op, std::string_view dtype,
                  int64_t count, int64_t bytes, std::string_view tag,
                  SourceLocation where = SourceLocation::Current()) noexcept;
  ~CollectiveScope();
  void* operator new(size_t) = delete;

 private:
  int exceptions_at_entry_;
};

}  // namespace dsdiag::probes
