#include "analyzers/kinds/hang/hang_evidence.h"

#include <algorithm>
#include <cctype>

#include "trace/flight_dump_keys.h"
#include "trace/records/end_record.h"

namespace dsdiag::analyzers::hang {
namespace {

bool Contains(std::string_view text, std::string_view word) {
  auto it = std::search(text.begin(), text.end(), word.begin(), word.end(), [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) == b;
  });
  return it != text.end();
}

}  // namespace

bool IsTimeoutText(std::string_view text) {
  return Contains(text, "timeout") || Contains(text, "timed out") || Contains(text, "time out");
}

std::string DescribeCollective(const std::string& op, const CollectiveKey& k,
                               const std::string& tag) {
  return (op.empty() ? "collective" : op) + " pg " + std::to_string(k.pg) + " seq " +
         std::to_string(k.seq) + (tag.empty() ? "" : " (" + tag + ")");
}

int64_t PendingAge(const trace::FlightDump& d, const trace::FlightDumpEntry& e) {
  const auto since = e.issued ? e.issued : e.started;
  return since ? d.ts - *since : 0;
}

const trace::FlightDumpEntry* DumpEntry(const HangRankState& s, const CollectiveKey& k) {
  if (!s.dump) return nullptr;
  for (const trace::FlightDumpEntry& e : s.dump->entries)
    if (e.pg == k.pg && e.seq == k.seq) return &e;
  return nullptr;
}

const trace::FlightDumpEntry* WaitedMessage(const HangRankState& s) {
  if (!s.dump) return nullptr;
  for (const trace::FlightDumpEntry& m : s.dump->p2p)
    if (m.state == trace::CollectiveState::kStarted) return &m;
  return nullptr;
}

bool TimedOut(const HangRankState& s) {
  return s.timeout ||
         (s.ended && s.end.end_seen && s.end.reason == trace::records::end_reason::kError &&
          IsTimeoutText(s.end.detail)) ||
         (s.dump && s.dump->reason == trace::flight_dump_reason::kTimeout);
}

std::string DescribeMessage(const trace::FlightDumpEntry& m) {
  const bool send = m.what.op == "send";
  const int64_t peer = m.peer.value_or(-1);
  return "a " + (m.what.op.empty() ? std::string("message") : m.what.op) +
         (send ? " to " : " from ") +
         (peer < 0 ? std::string("any rank") : "rank " + std::to_string(peer)) + " (pg " +
         std::to_string(m.pg) +
         (m.seq < 0 ? std::string() : ", message " + std::to_string(m.seq) + " of the pair") +
         (m.what.tag.empty() ? std::string() : ", " + m.what.tag) + ")";
}

bool UsesPg(const HangRankState& s, int pg) {
  if (pg == 0 || s.completed.count(pg)) return true;
  if (s.dump)
    for (const trace::FlightDumpEntry& e : s.dump->entries)
      if (e.pg == pg) return true;
  return false;
}

// A rank-local time on rank 0's clock: the trace's clock (refined by its clock records)
// when there is a trace, else the dump's.
std::optional<int64_t> ToRank0(const HangRankState& s, std::optional<int64_t> ts) {
  if (!ts) return std::nullopt;
  if (s.traced) return s.clock.ToRank0(*ts);
  if (s.dump && s.dump->clock) return trace::RankClock(*s.dump->clock).ToRank0(*ts);
  return std::nullopt;
}
}  // namespace dsdiag::analyzers::hang
