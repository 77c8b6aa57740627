// FlightRecorder: an in-memory ring of the last N collectives of one rank — issued,
// started, completed, with times, sizes, step and phase — dumped to
// `flight-rank-<R>.json` when something goes wrong (a collective past its timeout, SIGUSR1,
// SIGTERM, a fatal error). When a job hangs, the dumps of all ranks say who never entered
// which collective and what everyone else was waiting in.
//
// Point-to-point messages (send/recv) have a ring of their own, as large: a pipeline's many
// messages never push the collectives out, and they are dumped as the dump's `p2p` list (their
// sequence is their pair's, not the group's). A p2p entry is "started" while the rank waits in
// it (a blocking send/recv, wait() on the request), and only then can it time out: a request
// posted and never waited on (an isend whose work the job drops) is no hang.
//
// Keeping it costs a short uncontended lock per collective event and, once the ring has gone
// round, no allocation: the rings are preallocated, an entry's names are copied into the
// strings of its slot (which keep their capacity), and per-peer sizes (for groups of up to
// kMaxPeerCounts ranks) into fixed buffers.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "probes/peer_message.h"
#include "probes/phase.h"
#include "trace/collective.h"
#include "trace/flight_dump.h"
#include "trace/peer_counts.h"
#include "trace/trace_header.h"

namespace dsdiag::probes {

// Per-peer sizes (trace/peer_counts.h) an entry keeps; a larger group's are left out of the
// dump (its trace has them).
inline constexpr int kMaxPeerCounts = 32;

struct FlightEntry {
  int64_t id = 0;  // ring position ever written, to tell stale slots
  int pg = 0;
  int64_t seq = 0;
  trace::Collective what;
  int64_t step = 0;
  Phase phase = Phase::kNone;
  trace::CollectiveState state = trace::CollectiveState::kIssued;
  int64_t t_issued = 0;
  int64_t t_started = 0;
  int64_t t_completed = 0;
  int peer_counts = 0;  // peers with a send and a recv count (0: none)
  bool peers_listed = false;
  int64_t peers[kMaxPeerCounts] = {};
  int64_t send[kMaxPeerCounts] = {};
  int64_t recv[kMaxPeerCounts] = {};
  // Point-to-point entries: the other rank (global, -1: any source), its group rank, the tag.
  bool p2p = false;
  int64_t peer = -1;
  int64_t group_peer = -1;
  int64_t match_tag = 0;
};

class FlightRecorder {
 public:
  // `header` gives rank, run id and the clock pair written into dumps.
  FlightRecorder(const trace::TraceHeader& header, std::string run_dir, size_t capacity = 256);

  // Returns a handle for the updates below.
  int64_t Issue(int pg, int64_t seq, const trace::Collective& what, int64_t step, Phase phase,
                const trace::PeerCounts* counts = nullptr) noexcept;
  // A send or recv (its own ring), with its pair's sequence number (-1 while a recv from any
  // source is unmatched); returns a handle for the same updates.
  int64_t IssueP2P(const PeerMessage& m, int64_t seq, int64_t step, Phase phase) noexcept;
  void Start(int64_t handle) noexcept;
  void Complete(int64_t handle) noexcept;
  // A recv from any source learns its peer (and so its pair's sequence number) on completion.
  void SetPeer(int64_t handle, int64_t peer, int64_t group_peer, int64_t seq) noexcept;
  // A call site entries name by id (CollectiveProbe::SiteId), listed in every dump after.
  void AddSite(int64_t id, std::string_view file, int64_t line, std::string_view fn) noexcept;

  // Called at each dump for the process's thread stacks (the Python package gives Python's),
  // from whichever thread dumps; it must return promptly. May be set (or cleared with an
  // empty one) while another thread dumps: that dump uses the provider it started with.
  using StackProvider = std::function<std::vector<trace::ThreadStack>()>;
  void SetStackProvider(StackProvider provider);

  // Called before each dump that asks for stacks and before the watchdog times an entry out,
  // to complete the entries whose end is learned by asking rather than told: a collective
  // queued on a device (CollectiveOp::QueuedOnDevice), whose CUDA event the Python package
  // polls. It must return promptly; set and cleared as the stack provider is.
  using Refresher = std::function<void()>;
  void SetRefresher(Refresher refresher);
  void Refresh() const;

  // The oldest entry not yet completed — a collective, or a p2p message the rank waits in —
  // if any (for the watchdog).
  bool OldestPending(FlightEntry* out) const noexcept;

  // Writes flight-rank-<R>.json (replacing an earlier dump) with `reason` and where the
  // main thread was. Returns false (and *error) on I/O failure. Not for signal handlers.
  // `ask_stacks` false: no stacks — the fatal-signal path, whose faulting thread may hold
  // what the provider needs (Python's GIL) and never give it back.
  bool Dump(std::string_view reason, int64_t step, Phase phase, std::string* error,
            bool ask_stacks = true) const;
  std::string dump_path() const;
  // The dump as one JSON object (tests).
  std::string DumpJson(std::string_view reason, int64_t step, Phase phase,
                       bool ask_stacks = true) const;

 private:
  const trace::TraceHeader header_;
  const std::string run_dir_;
  mutable std::mutex mu_;
  std::vector<FlightEntry> ring_;
  std::vector<FlightEntry> p2p_ring_;
  std::vector<trace::CallSite> sites_;  // guarded by mu_
  int64_t next_id_ = 1;  // one count for both rings: ids order every entry; p2p handles are -id
  FlightEntry* Find(int64_t handle) noexcept;  // mu_ held; null when overwritten
  mutable std::mutex provider_mu_;
  mutable std::mutex dump_mu_;                           // held while a dump is written
  std::shared_ptr<const StackProvider> stack_provider_;  // null: no stacks in dumps
  std::shared_ptr<const Refresher> refresher_;           // null: every end is told
};

}  // namespace dsdiag::probes
