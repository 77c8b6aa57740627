// FlightDump: `flight-rank-<R>.json`, the one JSON object a rank's flight recorder writes
// when a collective stays pending past --timeout, on SIGUSR1/SIGTERM or on a fatal error
// (docs/trace-format.md, "Flight-recorder dump"):
//
//   {"schema":"dsdiag.flight/1","run_id":"...","rank":1,"world_size":4,"reason":"timeout",
//    "ts":912345678,"clock":{"mono":..,"wall":..,"offset":..,"offset_err":..},
//    "where":{"step":7,"phase":"sync"},
//    "entries":[{"pg":0,"seq":40,"op":"allreduce","dtype":"f32","n":12288,"bytes":49152,
//                "tag":"grad-bucket-2","step":7,"phase":"sync","state":"started",
//                "issued":912000000,"started":912000100}],
//    "stacks":[{"thread":"MainThread","frames":["train.py:40 in <module>",
//                                                "train.py:12 in step"]}]}
//
// An entry whose call site is known adds "site":ID, an id of the dump's "sites" list:
//   "sites":[{"id":1,"file":"train.py","line":35,"fn":"train_step"}]
// (records/site_record.h: the trace's `site` records, the same ids).
//
// An entry with per-peer sizes (an all_to_all with split sizes) adds "send":[..] and
// "recv":[..], and on a sub-group "peers" (trace/peer_counts.h).
//
// Point-to-point messages (send, recv, isend, irecv, batch_isend_irecv) are in a list of their
// own, `p2p`, never in `entries`: their `seq` is their pair's (records/p2p_record.h), which a
// reader of `entries` would take for the group's collective sequence. Each adds "peer" (the
// other rank, global; -1 for a recv from any source not yet matched), "group_peer" where it
// differs, and "match_tag" when not 0; `state` "started" there means the rank waits in it (a
// blocking send/recv, or wait() on the request), "issued" that it was posted and not waited on.
//
// `entries` are the rank's last collectives, oldest first; an entry not "completed" is one
// the rank entered and was still waiting in when it dumped. `stacks` (optional: Python jobs)
// are the process's threads at dump time, each innermost frame last. Times are the rank's own
// CLOCK_MONOTONIC, like its trace's `ts`. Writer (probes' FlightRecorder, synth) and reader
// (the run loader) both live here.
//
// ParseFlightDump never throws on bad content: a file that is not such an object (cut
// short, another schema major, a required field missing or mistyped) yields nullopt and a
// LocatedIssue. A bad entry is skipped and counted; the rest of the dump is still used.
// Unknown fields are ignored, as in traces.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trace/clock_reference.h"
#include "trace/collective.h"
#include "trace/located_issue.h"
#include "trace/peer_counts.h"

namespace dsdiag::trace {

inline constexpr std::string_view kFlightDumpSchema = "dsdiag.flight/1";

struct FlightDumpEntry {
  int pg = 0;
  int64_t seq = 0;
  Collective what{{}, {}, -1, -1, {}, 0};  // count, bytes < 0: the entry does not say
  std::optional<int64_t> step;
  std::string phase;
  CollectiveState state = CollectiveState::kIssued;
  std::optional<int64_t> issued;  // rank-local monotonic ns of each transition reached
  std::optional<int64_t> started;
  std::optional<int64_t> completed;
  PeerCounts counts;  // per-peer sizes (an all_to_all with split sizes), or empty
  // Point-to-point entries (FlightDump::p2p) only: the other rank, global (-1: a recv from any
  // source, not yet matched), its group rank, and the job's tag.
  std::optional<int64_t> peer;
  std::optional<int64_t> group_peer;
  int64_t match_tag = 0;

  bool pending() const { return state != CollectiveState::kCompleted; }
};

// One thread's stack at dump time: "file:line in function", outermost first.
struct ThreadStack {
  std::string thread;
  std::vector<std::string> frames;
};

struct FlightDump {
  std::string run_id;
  int rank = 0;
  int world_size = 0;
  std::string reason;  // "timeout", "SIGUSR1", "SIGTERM", "error", ...
  int64_t ts = 0;      // when it was written, rank-local monotonic ns
  std::optional<ClockReference> clock;
  std::optional<int64_t> where_step;  // the main thread's step and phase at dump time
  std::string where_phase;
  std::vector<FlightDumpEntry> entries;  // oldest first
  std::vector<FlightDumpEntry> p2p;      // point-to-point messages, oldest first
  std::vector<CallSite> sites;           // the call sites entries name by `site` id
  std::vector<ThreadStack> stacks;       // empty when the writer had none to give
  // Read side only: malformed entries left out, and what was wrong with the first of them.
  int64_t entries_skipped = 0;
  std::string first_entry_problem;

  // The call site `id` names, or null.
  const CallSite* Site(int64_t id) const;
  // The oldest entry still pending, or null.
  const FlightDumpEntry* OldestPending() const;
};

// The dump as one '\n'-terminated JSON line.
std::string FlightDumpJson(const FlightDump& dump);

// Parses the text of a dump (`path` names it in the issue).
std::optional<FlightDump> ParseFlightDump(const std::string& text, const std::string& path,
                                          LocatedIssue* issue);
// Reads and parses one dump file.
std::optional<FlightDump> ReadFlightDumpFile(const std::string& path, LocatedIssue* issue);

}  // namespace dsdiag::trace
