// Flight-recorder dumps: `flight-rank-<R>.json`, one JSON object a rank's watchdog writes
// when a collective stays pending past --timeout, on SIGUSR1/SIGTERM or on a fatal error:
//
//   {"schema":"dsdiag.flight/1","run_id":"...","rank":1,"world_size":4,"reason":"timeout",
//    "ts":912345678,"clock":{"mono":..,"wall":..,"offset":..,"offset_err":..},
//    "where":{"step":7,"phase":"sync"},
//    "entries":[{"pg":0,"seq":40,"op":"allreduce","dtype":"f32","n":12288,"bytes":49152,
//                "tag":"grad-bucket-2","step":7,"phase":"sync","state":"started",
//                "issued":912000000,"started":912000100}]}
//
// `entries` are the rank's last collectives, oldest first; an entry not "completed" is one
// the rank entered and was still waiting in when it dumped. Times are the rank's own
// CLOCK_MONOTONIC, like its trace's `ts`.
//
// ReadFlightDump never throws on bad content: a file that is not such an object (cut short,
// another schema major, a required field missing or mistyped) yields nullopt and an issue
// naming file, line, column and what was expected. A bad entry is skipped and counted; the
// rest of the dump is still used. Unknown fields are ignored, as in traces.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trace/trace_header.h"

namespace dsdiag::analyzers {

struct FlightEntry {
  enum class State { kIssued, kStarted, kCompleted };
  int pg = 0;
  int64_t seq = 0;
  std::string op;
  std::string dtype;
  std::optional<int64_t> n;
  std::string tag;
  std::optional<int64_t> step;
  std::string phase;
  State state = State::kIssued;
  std::optional<int64_t> issued;  // rank-local monotonic ns of each transition reached
  std::optional<int64_t> started;
  std::optional<int64_t> completed;

  bool pending() const { return state != State::kCompleted; }
};

struct FlightDumpData {
  std::string file_name;
  std::string run_id;
  int rank = 0;
  int world_size = 0;
  std::string reason;  // "timeout", "SIGUSR1", "SIGTERM", "error", ...
  int64_t ts = 0;      // when it was written, rank-local monotonic ns
  std::optional<trace::ClockReference> clock;
  std::optional<int64_t> where_step;  // the main thread's step and phase at dump time
  std::string where_phase;
  std::vector<FlightEntry> entries;  // oldest first
  int64_t entries_skipped = 0;       // malformed entries left out
  std::string first_entry_problem;   // what was wrong with the first of them

  // The oldest entry still pending, or null.
  const FlightEntry* OldestPending() const;
};

struct FlightDumpIssue {
  std::string file;  // the path as given
  int64_t line = 0;  // 1-based; 0 when the file could not be read at all
  int64_t column = 0;
  std::string expected;
  std::string found;
  std::string ToString() const;  // "FILE:LINE:COL: expected X, found Y"
};

// Reads and checks one dump. `file_name` is what findings call it.
std::optional<FlightDumpData> ReadFlightDump(const std::string& path, const std::string& file_name,
                                             FlightDumpIssue* issue);

// The same from the text of a dump (tests; `path` only names it in issues).
std::optional<FlightDumpData> ParseFlightDump(const std::string& text, const std::string& path,
                                              const std::string& file_name, FlightDumpIssue* issue);

// The collective a watchdog message names — the `error` record the watchdog writes beside
// its dump — as the probes' watchdog writes it:
//   "collective pg 0 seq 15 (allreduce, grad-bucket-0) pending for 61.0 s, past ..."
// (op and tag are optional: other writers say "allreduce pg 0 seq 15 (grad-bucket-0)").
// The first "pg <int> seq <int>" in the text; nullopt when there is none.
struct NamedCollective {
  int pg = 0;
  int64_t seq = 0;
  std::string op;
  std::string tag;
};
std::optional<NamedCollective> ParseNamedCollective(std::string_view text);

}  // namespace dsdiag::analyzers
