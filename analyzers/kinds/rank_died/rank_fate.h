// How a rank ended, as the rank-died analysis classifies it (its Fate), and what the
// records told about it on the way: the signal it recorded, the collective an error named,
// how far its progress records reach. rank_died_analyzer.cc has the rules.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "analyzers/framework/run_context.h"
#include "analyzers/kinds/common/collective_window.h"
#include "trace/json_value.h"
#include "trace/trace_reader.h"

namespace dsdiag::analyzers::rank_died {

inline constexpr size_t kMaxPerRank = 8;    // silent deaths reported one by one up to this many
inline constexpr size_t kMaxListed = 8;     // ranks detailed in a grouped finding
inline constexpr size_t kMaxMessage = 160;  // error message length in a summary
// A write refused for space or quota stops at a block the file system could not allocate.
inline constexpr int64_t kBlockBytes = 4096;

// kKilledAfterSignal: a `signal` record, then no `end` (killed while stopping).
// kFatalSignal: an `end` with reason signal naming a fatal one (SIGSEGV, SIGBUS, SIGABRT,
// SIGFPE, SIGILL): the rank crashed (probes/fatal_signals.h), it was not asked to stop.
enum class Fate {
  kClean,
  kNoEnd,
  kCutShort,  // no `end`, a partial last line: a failed write, not a death
  kKilledAfterSignal,
  kSignal,
  kFatalSignal,
  kError,
  kPeerFailure,
  kOkNonZero,
  kOtherReason
};

// The first `signal` record of a rank.
struct RecordedSignal {
  std::string name;
  int64_t step = 0;
  int64_t ts = 0;
};

// A collective a rank was left waiting in.
struct WaitingIn {
  CollectiveKey key;
  std::string op;
  std::string tag;
  std::optional<int64_t> step;
  std::string from;  // "flight dump", "error record"
};

// How a fatal signal came, from the `end` record's fields (trace/records/end_record.h).
struct FatalSignalEnd {
  std::string origin;  // "fault", "raise", "kill"; empty: not said (an older trace)
  int64_t sender = 0;
  std::string code, addr, pc;
};

// What OnRecord gathers of one rank, before its RankEnd.
// The rare parts (a fatal signal, a stop signal, an error naming a collective) are boxed:
// every rank has a slot, few have any of them (at 131,072 ranks inline optionals were 300
// bytes a rank).
struct RankRecords {
  std::unique_ptr<FatalSignalEnd> fatal;
  std::unique_ptr<RecordedSignal> signal;
  std::unique_ptr<WaitingIn> error_collective;
  // The latest end (ts + dur) of a step, phase or collective record: a flight dump written
  // after it is the rank's last word on where it was.
  std::optional<int64_t> progress_end;
};

// What Finish needs of one analysed rank; RankEnd's issue list is not kept.
struct RankState {
  int rank = 0;
  std::string file_name;
  std::string host;
  int64_t pid = 0;
  RankEnd end;
  RankRecords records;
  Fate fate = Fate::kClean;
  bool ended = false;  // its RankEnd came: the rest above is filled
};

// The signal that stopped the rank: its `end` record's, else the one it recorded.
std::string SignalOf(const RankState& s);

Fate Classify(const RankEnd& end, const RankRecords& records);
bool IsFailure(Fate fate);
// SIGUSR1 asks the flight recorder for a dump; it stops nothing.
bool EndsProcess(std::string_view signal);
// SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL: a crash, not a request to stop.
bool IsFatalSignal(std::string_view signal);
// step_begin, step, phase and coll records: how far the rank got.
bool IsProgress(int type);
// The collective an `error` record names: its pg/seq fields (synth, future probes), else
// the watchdog's message ("collective pg 0 seq 15 (allreduce, grad-bucket-0) pending ...").
std::optional<WaitingIn> NamedIn(const trace::Record& r);
// How the fatal signal an `end` record names came, when it says (reason signal, `origin`).
std::optional<FatalSignalEnd> FatalSignalOf(const trace::Record& end);
trace::JsonValue WaitingJson(const WaitingIn& w);
// "during step 3", or "before its first step".
std::string StepText(const std::optional<int64_t>& step);

}  // namespace dsdiag::analyzers::rank_died
