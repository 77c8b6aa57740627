// What the hang analysis gathers per rank, and the questions the verdict and the finding ask
// of it. The hang analyzer (hang_analyzer.cc) fills a HangRun from the records, the rank
// ends and the flight dumps; hang_verdict.h decides from it, hang_finding.h writes it up.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analyzers/framework/run_context.h"
#include "analyzers/kinds/common/collective_window.h"
#include "trace/flight_dump.h"
#include "trace/rank_clock.h"

namespace dsdiag::analyzers::hang {

// A failing rank's `error` record saying it could not reach the rendezvous store.
struct StoreUnreachable {
  std::string store;  // "host:port"
  std::optional<int64_t> tried_ms;
  std::string error;
};

struct TimeoutSignal {
  int64_t ts = 0;
  int64_t step = 0;
  std::string where;
  std::string message;
  std::optional<CollectiveKey> key;
  std::string op;
  std::string tag;
};

struct HangRankState {
  bool traced = false;
  std::string_view file_name;  // RunContext::ranks' own, not a copy per rank
  trace::RankClock clock;
  std::map<int, int64_t> completed;  // per pg, the highest seq completed
  std::optional<CollectiveKey> last_coll;
  std::optional<TimeoutSignal> timeout;
  int64_t timeouts = 0;
  std::optional<StoreUnreachable> store_unreachable;
  bool ended = false;
  RankEnd end;
  const trace::FlightDump* dump = nullptr;  // RunContext::flight_dumps
  std::string_view dump_file_name;          // RunContext::flight_dumps' own
};

// Why a rank counts as a witness of the hang, and where it waits.
struct Witness {
  int rank = 0;
  // "watchdog error", "timeout dump", "end: error", "pending in dump", "pending while rank R
  // timed out on a message with it"
  std::string signal;
  std::optional<CollectiveKey> key;
  bool inferred = false;
};

// Every rank the hang analysis knows of, by rank number (traced ranks, dumps, the world).
struct HangRun {
  std::vector<HangRankState> ranks;
  std::vector<int> missing;          // ranks without a trace file
  std::optional<int64_t> run_start;  // the earliest header clock, rank 0's clock
  int64_t max_step_ns = 0;           // the longest step any rank recorded
};

// Whether an error message says it timed out ("timeout", "timed out", "time out").
bool IsTimeoutText(std::string_view text);
// "allreduce pg 0 seq 20 (grad-bucket-0)".
std::string DescribeCollective(const std::string& op, const CollectiveKey& k,
                               const std::string& tag);
// How long a dump's entry had been pending when the dump was written.
int64_t PendingAge(const trace::FlightDump& d, const trace::FlightDumpEntry& e);
// The rank's dump entry for collective `k`, or null.
const trace::FlightDumpEntry* DumpEntry(const HangRankState& s, const CollectiveKey& k);
// The point-to-point message the rank waited in when it dumped (the oldest of its dump's
// `p2p` entries that is "started": a blocking send/recv, or wait() on its request), or null.
// A message is no collective: such a rank waits for one peer, not in its group's sequence.
const trace::FlightDumpEntry* WaitedMessage(const HangRankState& s);

// The rank says it timed out: a timeout error, an `end` error saying timeout, or a dump written
// for a timeout.
bool TimedOut(const HangRankState& s);
// "a recv from rank 1 (pg 0, message 3 of the pair, irecv)".
std::string DescribeMessage(const trace::FlightDumpEntry& m);
// Whether the rank takes part in process group `pg` (pg 0 holds every rank).
bool UsesPg(const HangRankState& s, int pg);
// A rank-local time on rank 0's clock: the trace's clock (refined by its clock records)
// when there is a trace, else the dump's.
std::optional<int64_t> ToRank0(const HangRankState& s, std::optional<int64_t> ts);

}  // namespace dsdiag::analyzers::hang
