// hang: the collective at which the run stopped making progress, the ranks that never
// entered it (the culprits) and what they were doing instead, and the ranks that waited in
// it and since when.
//
// Input, per rank:
//  - `coll` records: a collective is written when it completes, so the highest `seq` per
//    process group is how far the rank got;
//  - `error` records of the watchdog, the first sign of a hang:
//      {"type":"error","step":5,"where":"watchdog","message":"collective pg 0 seq 15
//       (allreduce, grad-bucket-0) pending for 61.0 s, past the 60.0 s timeout"}
//    (synth and future probes add "pg","seq","op","tag" fields; the message is parsed
//    when they are absent). Any error whose `where` is "watchdog" or whose message says
//    "timeout"/"timed out" counts, like an `end` with reason "error" saying so;
//  - the flight-recorder dump `flight-rank-<R>.json` (trace/flight_dump.h, read once by the
//    run loader): the entries the rank
//    had entered and not completed, with the monotonic time it entered them, and `where`
//    (step and phase) the main thread was at dump time;
//  - the rank's RankEnd: end reason, last step begun, last phase done, last record.
// A rank whose dump shows it waiting in a point-to-point message (its `p2p` list) and in no
// collective is no witness (a message has no place in a group's sequence): it is one of the
// ranks that never joined the others' collective, and the finding says which message from
// or to which peer it waited in instead.
// A rank *waits* (is a hang witness) when it timed out (error or end record as above), its
// dump's reason is "timeout", its dump holds an entry pending for longer than
// max(30 s, 3 x the longest step), or for any time while another rank timed out waiting in a
// message from or to it — but a rank that ended with "peer-failure" (or an error
// that is a lost peer's, trace/peer_loss.h) saw another
// rank fail, not a hang: a crash is the rank-died analyzer's, and without any witness there
// is no hang finding.
// The stuck collective is the (pg, seq) most witnesses wait in (their oldest pending dump
// entry, else the collective their timeout names, else — flagged "inferred" — the one after
// the last they completed); ties go to the lowest (pg, seq). Ranks of that group that neither
// wait in it nor completed it are the culprits (pg 0 holds every rank; another pg the ranks
// seen using it). When every rank waits, there is no culprit: the transport or a device
// stalled, and the finding names the waiters. When no witness names or implies a collective,
// every other rank is a culprit and the subject is null. One error finding: ranks = the
// culprits, step = the stuck collective's step, subject "allreduce pg 0 seq 20
// (grad-bucket-0)". A culprit without an end record and without a dump stopped writing: the
// rank-died analyzer reports its death as well, the hang finding says where the others were
// left waiting. The waiters' own rank-died findings (their timeouts) are turned into info
// follow-ons of this finding by the hang follow-on pass (passes/hang_follow_on_pass.cc), which
// matches their `waiting_in` against this finding's `pg`, `seq` and culprits.
// A cut link: when every rank waits (no culprit), the ranks that recorded that they could
// not reach the rendezvous store after their timeout (an `error` record with
// "store_unreachable": true, written by `dsdiag train` when publishing its error failed)
// while other ranks that failed reached it (an `end` reason "error" and no such record;
// waiters, or ranks that completed the collective and then waited in a later one) are the
// culprits: their host's link or network is cut, the others only lost them. Not
// when rank 0, the store's host, is among them. The finding's evidence then has `cut_off`
// {ranks, reached, store}; the follow-on pass makes the cut ranks' own timeouts follow-ons.
// Malformed or foreign dumps are left out by the run loader (trace-corrupt reports them).
//
// This file gathers the evidence (hang_evidence.h) and finds the witnesses; hang_verdict.h
// decides, hang_finding.h writes the finding.

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analyzers/framework/analyzer_factories.h"
#include "analyzers/framework/finding_kinds.h"
#include "analyzers/kinds/common/watchdog_message.h"
#include "analyzers/kinds/hang/hang_evidence.h"
#include "analyzers/kinds/hang/hang_finding.h"
#include "analyzers/kinds/hang/hang_verdict.h"
#include "trace/flight_dump_keys.h"
#include "trace/peer_loss.h"
#include "trace/record_types.h"
#include "trace/records/coll_record.h"
#include "trace/records/end_record.h"
#include "trace/records/error_record.h"
#include "trace/records/step_record.h"

namespace dsdiag::analyzers {

namespace records = trace::records;
namespace hang {
namespace {

constexpr int64_t kSecond = 1000000000;
constexpr int64_t kMinStuckNs = 30 * kSecond;
constexpr int64_t kStuckSteps = 3;  // a pending entry older than this many longest steps

class HangAnalyzer : public Analyzer {
 public:
  std::string_view name() const override { return kind::kHang; }
  std::vector<std::string_view> record_types() const override {
    return {trace::rec::kCollective, trace::rec::kError, trace::rec::kStep, trace::rec::kClock};
  }

  void Begin(const RunContext& run) override {
    int max_rank = std::max(run.world_size - 1, -1);
    for (const RankInfo& r : run.ranks) max_rank = std::max(max_rank, r.rank);
    for (const RunFlightDump& d : run.flight_dumps) max_rank = std::max(max_rank, d.rank);
    run_.ranks.resize(static_cast<size_t>(max_rank + 1));
    for (const RankInfo& r : run.ranks) {
      HangRankState& s = run_.ranks[r.rank];
      s.traced = true;
      s.file_name = r.file_name;
      s.clock = trace::RankClock(r.header.clock);
      const int64_t start = s.clock.ToRank0(r.header.clock.mono_ns);
      run_.run_start = run_.run_start ? std::min(*run_.run_start, start) : start;
    }
    run_.missing = run.missing_ranks;
    for (const RunFlightDump& d : run.flight_dumps) {
      run_.ranks[d.rank].dump = &d.dump;
      run_.ranks[d.rank].dump_file_name = d.file_name;
    }
  }

  void OnRecord(const RankInfo& rank, const trace::Record& r) override {
    HangRankState& s = run_.ranks[rank.rank];
    const int type = r.type_id();
    if (type == trace::rec_id::kCollective) {
      const records::CollView coll(r);
      const auto pg = coll.pg();
      const auto seq = coll.seq();
      if (!pg || !seq) return;
      const CollectiveKey key{static_cast<int>(*pg), *seq};
      auto [it, fresh] = s.completed.try_emplace(key.pg, key.seq);
      if (!fresh) it->second = std::max(it->second, key.seq);
      s.last_coll = key;
    } else if (type == trace::rec_id::kError) {
      OnError(&s, r);
    } else if (type == trace::rec_id::kStep) {
      run_.max_step_ns = std::max(run_.max_step_ns, records::StepView(r).dur().value_or(0));
    } else if (type == trace::rec_id::kClock) {
      s.clock.Refine(r);
    }
  }

  void OnRankEnd(const RankInfo& rank, const RankEnd& end) override {
    HangRankState& s = run_.ranks[rank.rank];
    s.ended = true;
    s.end = end;
    s.end.issues.clear();
  }

  void Finish(const RunContext&, std::vector<Finding>* findings) override {
    std::vector<Witness> witnesses;
    for (size_t r = 0; r < run_.ranks.size(); ++r)
      if (auto w = WitnessOf(static_cast<int>(r))) witnesses.push_back(std::move(*w));
    if (witnesses.empty()) return;
    findings->push_back(MakeHangFinding(run_, witnesses, JudgeHang(run_, witnesses)));
  }

 private:
  static void OnError(HangRankState* s, const trace::Record& r) {
    const records::ErrorView error(r);
    if (error.store_unreachable()) {
      if (!s->store_unreachable) {
        s->store_unreachable =
            StoreUnreachable{std::string(error.store().value_or("")), error.tried_ms(),
                             std::string(error.store_error().value_or(""))};
      }
      return;
    }
    const std::string where(error.where().value_or(""));
    const std::string message(error.message().value_or(""));
    if (where != "watchdog" && !IsTimeoutText(message)) return;
    if (s->timeouts++ > 0) return;
    TimeoutSignal t;
    t.ts = r.ts();
    t.step = r.step();
    t.where = where;
    t.message = message;
    const auto pg = error.pg();
    const auto seq = error.seq();
    const std::optional<NamedCollective> named = ParseNamedCollective(message);
    if (pg && seq) {
      t.key = CollectiveKey{static_cast<int>(*pg), *seq};
    } else if (named) {
      t.key = CollectiveKey{named->pg, named->seq};
    }
    if (named && t.key && *t.key == CollectiveKey{named->pg, named->seq}) {
      t.op = named->op;
      t.tag = named->tag;
    }
    if (auto op = error.op()) t.op = std::string(*op);
    if (auto tag = error.tag()) t.tag = std::string(*tag);
    s->timeout = std::move(t);
  }

  std::optional<Witness> WitnessOf(int rank) const {
    const HangRankState& s = run_.ranks[rank];
    const trace::FlightDumpEntry* pending = s.dump ? s.dump->OldestPending() : nullptr;
    // Waiting in a point-to-point message (its watchdog timed out on it), in no collective: it
    // did not reach the others' collective, which makes it a culprit of theirs, not a witness.
    if (!pending && WaitedMessage(s) && !(s.timeout && s.timeout->key)) return std::nullopt;
    Witness w;
    w.rank = rank;
    if (s.timeout) {
      w.signal = s.timeout->where == "watchdog" ? "watchdog error" : "timeout error";
    } else if (s.ended && s.end.end_seen && s.end.reason == trace::records::end_reason::kError &&
               IsTimeoutText(s.end.detail)) {
      w.signal = "end: error (timeout)";
    } else if (s.dump && s.dump->reason == trace::flight_dump_reason::kTimeout) {
      w.signal = "timeout dump";
    } else if (pending && PendingAge(*s.dump, *pending) >= StuckAfter() &&
               !(s.end.end_seen && (s.end.reason == trace::records::end_reason::kPeerFailure ||
                                    (s.end.reason == trace::records::end_reason::kError &&
                                     trace::LooksLikePeerLoss(s.end.detail))))) {
      w.signal = "pending in dump";
    } else if (const auto peer = pending ? PeerTimedOutOnMessageWith(rank) : std::nullopt) {
      // However short its own wait: the launcher stops it as soon as the peer's watchdog ends
      // the peer, often before its own timeout (the two waits began apart).
      w.signal = "pending while rank " + std::to_string(*peer) + " timed out on a message with it";
    } else {
      return std::nullopt;
    }
    if (pending) {
      w.key = CollectiveKey{pending->pg, pending->seq};
    } else if (s.timeout && s.timeout->key) {
      w.key = s.timeout->key;
    } else if (s.last_coll) {
      w.key = CollectiveKey{s.last_coll->pg, s.completed.at(s.last_coll->pg) + 1};
      w.inferred = true;
    }
    return w;
  }

  // Another rank whose watchdog ended it while it waited in a point-to-point message from or
  // to `rank`: the hang's witness on the other side is `rank`, pending in a collective.
  std::optional<int> PeerTimedOutOnMessageWith(int rank) const {
    for (size_t r = 0; r < run_.ranks.size(); ++r) {
      const HangRankState& other = run_.ranks[r];
      const trace::FlightDumpEntry* m = WaitedMessage(other);
      if (static_cast<int>(r) != rank && m != nullptr && m->peer.value_or(-1) == rank &&
          TimedOut(other))
        return static_cast<int>(r);
    }
    return std::nullopt;
  }

  int64_t StuckAfter() const { return std::max(kMinStuckNs, kStuckSteps * run_.max_step_ns); }

  HangRun run_;
};

}  // namespace
}  // namespace hang

std::unique_ptr<Analyzer> CreateHangAnalyzer() { return std::make_unique<hang::HangAnalyzer>(); }

}  // namespace dsdiag::analyzers
