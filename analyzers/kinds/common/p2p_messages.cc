#include "analyzers/kinds/common/p2p_messages.h"

#include <algorithm>
#include <functional>
#include <utility>

#include "analyzers/framework/finding_kinds.h"
#include "analyzers/kinds/common/evidence_text.h"
#include "trace/records/p2p_record.h"

namespace dsdiag::analyzers {

namespace records = trace::records;
using trace::JsonValue;

namespace {

constexpr size_t kMaxPairsListed = 8;

std::string SideText(const std::string& dtype, const std::optional<int64_t>& n) {
  std::string text = dtype.empty() ? std::string() : dtype + " ";
  return text + "n=" + (n ? std::to_string(*n) : std::string("?"));
}

JsonValue SideJson(int rank, const std::string& dtype, const std::optional<int64_t>& n,
                   const std::string& call, bool from_dump) {
  JsonValue v = JsonValue::Object();
  v.Set("rank", static_cast<int64_t>(rank));
  v.Set("dtype", dtype);
  v.Set("n", OptInt(n));
  v.Set("call", call);
  v.Set("source", from_dump ? "flight-dump" : "trace");
  return v;
}

// A dump entry's element count, when it said one.
std::optional<int64_t> KnownCount(const trace::Collective& c) {
  if (c.count < 0) return std::nullopt;
  return c.count;
}

}  // namespace

size_t P2PMessages::KeyHash::operator()(const Key& k) const {
  size_t h = std::hash<int64_t>()(k.seq);
  for (int64_t v : {k.pg, k.from, k.to, k.tag}) h = h * 1000003u ^ std::hash<int64_t>()(v);
  return h;
}

void P2PMessages::AddDump(int rank, const trace::FlightDump& dump) {
  for (const trace::FlightDumpEntry& e : dump.p2p) {
    if (!e.peer || *e.peer < 0 || e.seq < 0) continue;  // from any source, unmatched: no pair
    const bool receiver = e.what.op == records::kP2PRecv;
    if (!receiver && e.what.op != records::kP2PSend) continue;
    const Key key{e.pg, receiver ? *e.peer : rank, receiver ? rank : *e.peer, e.match_tag, e.seq};
    if (!dumped_at_[receiver].try_emplace(key, dumped_.size()).second) continue;
    dumped_.push_back(
        {key, receiver,
         Side{e.what.dtype, KnownCount(e.what), e.what.tag, e.step.value_or(0), true}});
  }
}

void P2PMessages::Add(int rank, const trace::Record& r) {
  const records::P2PView v(r);
  const auto pg = v.pg();
  const auto peer = v.peer();
  const auto seq = v.seq();
  if (!pg || !peer || !seq || *peer < 0 || *seq < 0) return;
  const bool receiver = v.is_recv();
  if (!receiver && !v.is_send()) return;
  const Key key{*pg, receiver ? *peer : rank, receiver ? rank : *peer, v.match_tag(), *seq};
  if (!dumped_at_[receiver].empty()) {
    if (auto it = dumped_at_[receiver].find(key); it != dumped_at_[receiver].end())
      dumped_[it->second].in_trace = true;  // the trace's record is the one to use
  }
  Put(key, receiver,
      Side{std::string(v.dtype().value_or("")), v.count(), std::string(v.tag().value_or("")),
           r.step(), false});
}

void P2PMessages::Put(const Key& key, bool receiver, Side side) {
  auto it = open_.find(key);
  if (it == open_.end()) {
    open_[key].side[receiver] = std::move(side);
    return;
  }
  Message& m = it->second;
  if (m.side[receiver] || !m.side[!receiver]) return;  // this side known already
  if (receiver)
    Compare(key, *m.side[0], side);
  else
    Compare(key, side, *m.side[1]);
  open_.erase(it);
}

void P2PMessages::Compare(const Key& key, const Side& send, const Side& recv) {
  if (send.dtype == recv.dtype && send.n == recv.n) return;
  auto [it, fresh] = by_pg_.try_emplace(key.pg);
  PgMismatches& m = it->second;
  ++m.count;
  const int64_t step = std::min(send.step, recv.step);
  const int64_t first_step = std::min(m.first.send.step, m.first.recv.step);
  if (fresh || std::make_pair(step, key.seq) < std::make_pair(first_step, m.first.key.seq))
    m.first = {key, send, recv};
  const auto pair = std::make_pair(static_cast<int>(key.from), static_cast<int>(key.to));
  m.pairs.try_emplace(pair,
                      CountPair{pair.first, pair.second, send.n.value_or(-1), recv.n.value_or(-1)});
}

void P2PMessages::Finish(std::vector<Finding>* findings) {
  // A message one rank completed and the other still waited in when it dumped (the receiver
  // Gloo aborted), or one whose record its rank never wrote (it died before the step's end):
  // the dump entries stand for the sides no trace has.
  for (DumpSide& d : dumped_)
    if (!d.in_trace) Put(d.key, d.receiver, std::move(d.side));
  dumped_.clear();
  for (const auto& [pg, m] : by_pg_) findings->push_back(MakeFinding(m));
}

Finding P2PMessages::MakeFinding(const PgMismatches& m) const {
  std::vector<CountPair> pairs;
  for (const auto& [ranks, pair] : m.pairs) pairs.push_back(pair);
  const PairVerdict verdict = JudgePairs(pairs);
  const Mismatch& first = m.first;
  const int from = static_cast<int>(first.key.from), to = static_cast<int>(first.key.to);
  const int64_t step = std::min(first.send.step, first.recv.step);

  Finding f;
  f.kind = std::string(kind::kCollectiveMismatch);
  f.severity = Severity::kError;
  f.ranks = verdict.named;
  f.step = step;
  f.subject = "pg " + std::to_string(first.key.pg) + " p2p " + std::to_string(from) + "->" +
              std::to_string(to) + " #" + std::to_string(first.key.seq);
  f.summary = "at " + *f.subject + " (step " + std::to_string(step) + ") rank " +
              std::to_string(from) + " sends " + SideText(first.send.dtype, first.send.n) + " (" +
              first.send.call + ") to rank " + std::to_string(to) + ", which expects " +
              SideText(first.recv.dtype, first.recv.n) + " (" + first.recv.call + ") from it";
  if (pairs.size() > 1)
    f.summary += "; " + std::to_string(pairs.size() - 1) + " more pair" +
                 (pairs.size() > 2 ? "s disagree" : " disagrees");
  f.summary += verdict.majority
                   ? "; " + OnRanks(verdict.named) + " disagree" +
                         (verdict.named.size() == 1 ? "s" : "") + " with the most peers"
                   : " (no majority: every rank in a disagreeing pair is in as many, and "
                     "nothing in the traces says which side computed its size wrong)";
  if (m.count > 1)
    f.summary += "; " + std::to_string(m.count) + " messages of pg " +
                 std::to_string(first.key.pg) + " disagree in all";

  JsonValue listed = JsonValue::Array();
  for (size_t i = 0; i < pairs.size() && i < kMaxPairsListed; ++i) {
    JsonValue p = JsonValue::Object();
    p.Set("from", static_cast<int64_t>(pairs[i].from));
    p.Set("to", static_cast<int64_t>(pairs[i].to));
    p.Set("sent", pairs[i].sent);
    p.Set("expected", pairs[i].expected);
    listed.Push(std::move(p));
  }
  JsonValue& e = f.evidence;
  e.Set("pg", first.key.pg);
  e.Set("p2p", true);
  e.Set("from", static_cast<int64_t>(from));
  e.Set("to", static_cast<int64_t>(to));
  e.Set("pair_seq", first.key.seq);
  if (first.key.tag != 0) e.Set("match_tag", first.key.tag);
  e.Set("step", step);
  e.Set("send",
        SideJson(from, first.send.dtype, first.send.n, first.send.call, first.send.from_dump));
  e.Set("recv",
        SideJson(to, first.recv.dtype, first.recv.n, first.recv.call, first.recv.from_dump));
  e.Set("pairs", std::move(listed));
  e.Set("disagreeing_pairs", static_cast<int64_t>(pairs.size()));
  e.Set("mismatched_messages", m.count);
  e.Set("source", first.send.from_dump || first.recv.from_dump ? "flight-dump" : "trace");
  e.Set("majority", verdict.majority);
  f.hint =
      "A send and the recv it meets disagree on the message's size or dtype: the backend pairs "
      "them by order, not by size, so the receiver gets the sender's bytes — Gloo aborts it "
      "when they are more than its buffer and leaves the rest of its tensor as it was when "
      "they are fewer (silently). Look at how the named ranks computed the shape of what they "
      "send or receive at step " +
      std::to_string(step) +
      " (a shape exchanged beforehand that went stale, a last micro-batch of another size, a "
      "send and a recv issued in different orders).";
  return f;
}

}  // namespace dsdiag::analyzers
