// What the analyzers know about a run before and after its records stream by.
//
// RunContext is built once by the run loader from the file names and headers in RUN_DIR
// (no record beyond line 1 is read for it) and the flight dumps there. RankEnd is built by the step
// driver as each rank's file runs out: how the rank stopped, and what the reader had to skip.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trace/flight_dump.h"
#include "trace/trace_header.h"
#include "trace/trace_reader.h"

namespace dsdiag::analyzers {

// One rank whose trace takes part in the analysis (a valid header, the run's run_id).
struct RankInfo {
  int rank = 0;
  std::string path;       // as found under the run dir
  std::string file_name;  // "rank-00003.jsonl", what findings name
  trace::TraceHeader header;
};

// A rank trace left out of the analysis, and why; the trace-corrupt analyzer reports it.
struct ExcludedFile {
  enum class Reason { kNoHeader, kForeignRunId, kSchemaMajor, kRankOutOfRange };
  int rank = 0;  // the rank its file name claims
  std::string path;
  std::string file_name;
  Reason reason = Reason::kNoHeader;
  trace::LocatedIssue issue;  // file, line, column, expected, found
};

// A flight-recorder dump `flight-rank-<R>.json` of the run (trace/flight_dump.h), parsed
// once by the run loader: it belongs to the run (its run_id, when it has one, is the run's)
// and its `rank` is the one its file name says. The hang, rank-died and collective-mismatch
// analyzers read it from here; trace-corrupt reports its skipped entries.
struct RunFlightDump {
  int rank = 0;  // from the file name, equal to dump.rank
  std::string path;
  std::string file_name;
  trace::FlightDump dump;
};

// A dump file the analysis leaves out, and why; the trace-corrupt analyzer reports it.
struct ExcludedFlightDump {
  enum class Reason { kUnreadable, kForeignRunId, kRankMismatch };
  int rank = 0;  // the rank its file name claims
  std::string path;
  std::string file_name;
  Reason reason = Reason::kUnreadable;
  trace::LocatedIssue issue;  // kUnreadable: what the reader met
  std::string dump_run_id;    // kForeignRunId: the dump's run_id...
  std::string run_id;         // ...and the run's
  int dump_rank = 0;          // kRankMismatch: the rank the dump says it is
};

struct RunContext {
  std::string dir;                 // as given by the user
  std::string run_id;              // the majority of the headers' run_id
  int world_size = 0;              // the majority of the headers' world_size; 0 if none was read
  std::vector<RankInfo> ranks;     // analyzed ranks, by rank
  std::vector<int> ranks_found;    // their rank numbers, sorted
  std::vector<int> missing_ranks;  // 0..world_size-1 without any trace file
  std::vector<ExcludedFile> excluded;              // trace files left out, by rank
  std::vector<RunFlightDump> flight_dumps;         // usable dumps, by rank
  std::vector<ExcludedFlightDump> excluded_dumps;  // dump files left out, by rank

  // The usable dump of `rank`, or null.
  const RunFlightDump* FlightDumpOf(int rank) const;
};

// How one rank's trace ended, gathered while its records streamed by.
struct RankEnd {
  int64_t records = 0;  // valid records delivered, the header included
  int64_t lines_read = 0;
  int64_t bytes_read = 0;

  // The `end` record, when the rank wrote one.
  bool end_seen = false;
  std::string reason;             // "ok", "signal", "error", "peer-failure", ...
  std::optional<int64_t> status;  // the exit status it announced
  std::string detail;             // the signal name or the error message
  int64_t end_step = 0;

  // Progress: the last step opened (`step_begin`), the last closed (`step`), the highest
  // step on any record, and the last phase that finished (phases are written on exit).
  std::optional<int64_t> last_step_begun;
  std::optional<int64_t> last_step_done;
  int64_t max_step = 0;
  std::string last_phase;
  // The last valid record: its rank-local time and line.
  std::optional<int64_t> last_ts;
  int64_t last_line = 0;

  // What the reader skipped. `issues` holds the first examples; issue_count counts all,
  // the truncated tail included.
  std::vector<trace::LocatedIssue> issues;
  int64_t issue_count = 0;
  bool truncated_tail = false;
};

}  // namespace dsdiag::analyzers
