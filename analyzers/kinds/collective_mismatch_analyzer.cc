// collective-mismatch: at the same (process group, sequence number) ranks issued different
// collectives — another op, dtype or element count.
//
// Input: `coll` records, one per collective a rank completed,
//   {"type":"coll","ts":7000,"step":3,"pg":0,"seq":17,"op":"allreduce","dtype":"f32",
//    "n":12288,"bytes":49152,"dur":2100000,"tag":"grad-bucket-2"}
// plus the pending entries of flight-recorder dumps (a mismatched collective often never
// completes, so only the dump has it). (pg, seq) names the same op on every rank: that is
// what a collective backend pairs. Ranks whose (op, dtype, n) differ at one (pg, seq) paired
// unrelated work; the backend then hangs, fails, or combines the wrong tensors in silence.
// The ranks are grouped by signature and judged by split_verdict.h: the largest group is
// the reference and the others are odd. A tie (two ranks, 2 against 2; or four ranks of
// which the launcher stopped two before they got there) goes to the group's history, as
// torch_fr/fr_mismatch.h does for dumps: of two sides, the one issuing a signature every
// rank agreed on at an earlier seq of the group keeps its word and the one issuing
// something new is odd. Else every rank of the split is named. Error. A rank that never completed
// the collective is still counted with the signature its flight dump's pending entry holds. One
// finding per process group: its first mismatch (lowest seq) in full, plus how many later
// collectives of the group differ too — after one extra or missing collective every later seq is
// shifted, so the first is the one that matters. The tag (what the op is for) is shown but not
// compared: two buckets of equal size may legitimately swap order between runs, never between
// ranks, but that is not visible here.
//
// An all-to-all with per-peer sizes (`send`/`recv` on the record or dump entry) is compared on
// op and dtype only — its total legitimately differs by rank — and then pair by pair: rank
// i's send to j against j's recv from i (common/peer_count_pairs.h). The rank whose sizes
// disagree with the most peers is named; with two ranks, both. Also error, one per group.
//
// Point-to-point messages (`p2p` records, the dumps' `p2p` lists) are numbered per pair, not
// in the group's sequence: each send is checked against the recv it meets, dtype and count
// (common/p2p_messages.h), the rank in the most disagreeing pairs named. Error, one per group.

#include <algorithm>
#include <array>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "analyzers/framework/analyzer_factories.h"
#include "analyzers/framework/finding_kinds.h"
#include "analyzers/kinds/common/call_sites.h"
#include "analyzers/kinds/common/collective_window.h"
#include "analyzers/kinds/common/evidence_text.h"
#include "analyzers/kinds/common/p2p_messages.h"
#include "analyzers/kinds/common/peer_count_pairs.h"
#include "analyzers/kinds/common/rank_groups.h"
#include "analyzers/kinds/common/split_verdict.h"
#include "analyzers/kinds/common/stream_parting.h"
#include "trace/record_types.h"
#include "trace/records/coll_record.h"
#include "trace/trace_reader.h"

namespace dsdiag::analyzers {

namespace records = trace::records;
namespace {

using trace::JsonValue;

constexpr size_t kMaxGroupsListed = 4;
constexpr size_t kMaxPairsListed = 8;
constexpr int64_t kNotRecorded = -1;
constexpr int64_t kPerPeer = -2;  // n of an op with per-peer sizes: compared pair by pair

// What the backend pairs: op, dtype and element count (n; kNotRecorded, kPerPeer).
struct Signature {
  std::string op;
  std::string dtype;
  int64_t n = -1;
};

// A signature still pointing into a record: looked up without building strings.
struct SignatureView {
  std::string_view op;
  std::string_view dtype;
  int64_t n = -1;
};

// Orders Signature and SignatureView alike, so that maps find either.
struct SignatureLess {
  using is_transparent = void;
  template <typename A, typename B>
  bool operator()(const A& a, const B& b) const {
    return std::make_tuple(std::string_view(a.op), std::string_view(a.dtype), a.n) <
           std::make_tuple(std::string_view(b.op), std::string_view(b.dtype), b.n);
  }
};

// One rank's record of one collective; signatures and tags are interned.
struct Issued {
  int rank = 0;
  int signature = 0;
  int tag = 0;
  int64_t step = 0;
  std::shared_ptr<const trace::PeerCounts> counts;  // null: no per-peer sizes
  int site = 0;                                     // RunSites' number; 0: unknown
};

// Per-peer sizes worth checking, or null.
std::shared_ptr<const trace::PeerCounts> Shared(trace::PeerCounts counts) {
  if (!counts.consistent()) return nullptr;
  return std::make_shared<const trace::PeerCounts>(std::move(counts));
}

// The first all-to-all of a process group whose per-peer sizes disagree, and how many followed.
struct PgCountMismatch {
  CollectiveKey key;
  int64_t step = 0;
  int signature = 0;
  std::vector<CountPair> pairs;
  PairVerdict verdict;
  int64_t count = 0;
  int64_t last_seq = 0;
  bool from_dump = false;
  std::vector<Issued> issued;
};

// Which rule chose the reference group of a mismatch (docs/findings.md, `basis`).
// The first mismatch of a process group, and how many followed.
struct PgMismatch {
  CollectiveKey key;
  int64_t step = 0;
  SplitBasis basis = SplitBasis::kMajority;
  SplitVerdict verdict;                      // whom the finding names, by `basis`
  int64_t agreed_seq = 0;                    // kHistory: where every rank issued the reference
  std::vector<RankGroup<int>> groups;        // by signature id, reference first
  std::vector<std::vector<int>> group_tags;  // tag ids per group
  int64_t count = 0;
  int64_t last_seq = 0;
  bool from_dump = false;
  std::vector<Issued> issued;  // every rank's record of `key`, by rank
};

// One record per rank, by rank: the first of a rank's kept (the traces' come before the dumps').
std::vector<Issued> OnePerRank(std::vector<Issued> issued) {
  std::stable_sort(issued.begin(), issued.end(),
                   [](const Issued& a, const Issued& b) { return a.rank < b.rank; });
  issued.erase(std::unique(issued.begin(), issued.end(),
                           [](const Issued& a, const Issued& b) { return a.rank == b.rank; }),
               issued.end());
  return issued;
}

// Counts one more mismatch of a group (PgMismatch, PgCountMismatch) unless it merges dump
// entries into the known one; true when its details are to be kept: the group's first.
template <typename M>
bool CountKeepingFirst(M* m, bool fresh, bool merge, const CollectiveKey& key) {
  if (!merge) {
    ++m->count;
    m->last_seq = std::max(m->last_seq, key.seq);
  }
  return fresh || merge || key.seq < m->key.seq;
}

// What the intern maps keep of a key that points into a record.
Signature ToOwned(const SignatureView& v) { return {std::string(v.op), std::string(v.dtype), v.n}; }
std::string ToOwned(std::string_view v) { return std::string(v); }

bool Same(const Signature& a, const SignatureView& b) {
  return a.n == b.n && a.op == b.op && a.dtype == b.dtype;
}
bool Same(const std::string& a, std::string_view b) { return a == b; }

// Ids for signatures or tags, given in order of first sight. A run has a handful of each and
// they come round in turn (one per gradient bucket), so the last few ids handed out are
// tried before the map: a map lookup compares strings at every level, per `coll` record.
template <typename Owned, typename Less>
class InternTable {
 public:
  template <typename Key>
  int Id(const Key& key) {
    for (int id : recent_)
      if (id >= 0 && Same(*by_id_[static_cast<size_t>(id)], key)) return id;
    auto it = ids_.find(key);
    if (it == ids_.end()) {
      it = ids_.emplace(ToOwned(key), static_cast<int>(by_id_.size())).first;
      by_id_.push_back(&it->first);
    }
    recent_[next_++ % recent_.size()] = it->second;
    return it->second;
  }
  const Owned& operator[](int id) const { return *by_id_[static_cast<size_t>(id)]; }

 private:
  std::map<Owned, int, Less> ids_;
  std::vector<const Owned*> by_id_;
  std::array<int, 4> recent_ = {-1, -1, -1, -1};
  size_t next_ = 0;
};

class CollectiveMismatchAnalyzer : public Analyzer {
 public:
  std::string_view name() const override { return kind::kCollectiveMismatch; }
  std::vector<std::string_view> record_types() const override {
    return {trace::rec::kCollective, trace::rec::kP2P, trace::rec::kSite};
  }

  void Begin(const RunContext& run) override {
    // Only the pending entries: completed ones are in the traces already.
    for (const RunFlightDump& d : run.flight_dumps) {
      messages_.AddDump(d.rank, d.dump);
      for (const trace::CallSite& s : d.dump.sites) sites_.Add(d.rank, s.id, s.file, s.line, s.fn);
      for (const trace::FlightDumpEntry& e : d.dump.entries) {
        if (!e.pending()) continue;
        auto counts = Shared(e.counts);
        const SignatureView sig{e.what.op, e.what.dtype,
                                counts ? kPerPeer : std::max(e.what.count, kNotRecorded)};
        const Issued issued{d.rank,
                            sigs_.Id(sig),
                            tags_.Id(std::string_view(e.what.tag)),
                            e.step.value_or(0),
                            std::move(counts),
                            sites_.Of(d.rank, e.what.site)};
        pending_.push_back({CollectiveKey{e.pg, e.seq}, issued});
        pending_keys_.insert(CollectiveKey{e.pg, e.seq});
      }
    }
  }

  void OnRecord(const RankInfo& rank, const trace::Record& r) override {
    if (r.type_id() == trace::rec_id::kP2P) {
      messages_.Add(rank.rank, r);
      return;
    }
    if (r.type_id() == trace::rec_id::kSite) {
      sites_.Add(rank.rank, r);
      return;
    }
    if (r.type_id() != trace::rec_id::kCollective) return;
    const records::CollView coll(r);
    const auto pg = coll.pg();
    const auto seq = coll.seq();
    if (!pg || !seq) return;
    std::shared_ptr<const trace::PeerCounts> counts;
    if (trace::PeerCounts c; coll.counts(&c)) counts = Shared(std::move(c));
    const SignatureView sig{coll.op().value_or(""), coll.dtype().value_or(""),
                            counts ? kPerPeer : coll.count().value_or(kNotRecorded)};
    const std::string_view tag = coll.tag().value_or("");
    window_.Add({static_cast<int>(*pg), *seq}, r.step(),
                {rank.rank, sigs_.Id(sig), tags_.Id(tag), r.step(), std::move(counts),
                 sites_.Of(rank.rank, coll.site())});
  }

  void OnStepDone(int64_t step) override {
    window_.Flush(step, [this](const CollectiveKey& k, const CollectiveSlot<Issued>& s) {
      Check(k, s, false);
    });
  }

  void Finish(const RunContext&, std::vector<Finding>* findings) override {
    auto check = [this](const CollectiveKey& k, const CollectiveSlot<Issued>& s) {
      Check(k, s, false);
    };
    window_.FlushAll(check);
    // Dump entries last: a rank that recorded the collective in its trace keeps that record.
    CollectiveWindow<Issued> dumps;
    for (const PendingEntry& p : pending_) dumps.Add(p.key, p.issued.step, p.issued);
    dumps.FlushAll(
        [this](const CollectiveKey& k, const CollectiveSlot<Issued>& s) { Check(k, s, true); });
    for (auto& [pg, m] : mismatches_) {
      ChooseReference(&m);  // now that every agreed collective of the group is known
      findings->push_back(MakeFinding(m));
      if (auto p = parting_.Of(pg); p && p->seq <= m.key.seq) AddParting(*p, &findings->back());
    }
    for (const auto& [pg, m] : count_mismatches_) findings->push_back(MakeFinding(m));
    for (int pg : parting_.groups()) {
      if (mismatches_.count(pg) || count_mismatches_.count(pg)) continue;
      if (auto p = parting_.Of(pg)) findings->push_back(MakeFinding(*p));
    }
    messages_.Finish(findings);
  }

 private:
  struct PendingEntry {
    CollectiveKey key;
    Issued issued;
  };

  void Check(const CollectiveKey& key, const CollectiveSlot<Issued>& slot, bool from_dump) {
    std::vector<Issued> issued = slot.entries;
    // A collective some ranks' traces hold (they completed it) while other ranks' dumps hold
    // it pending (they waited in it, or died in it: Gloo aborts the receiver of a wrong size,
    // and at three ranks or more the others may complete it): its records are compared with
    // the dumps' entries at the end too, so that the majority counts every rank — and one
    // record is not dropped for want of a second rank.
    if (!from_dump && pending_keys_.count(key)) {
      records_of_pending_[key] = issued;
      if (issued.size() == 1) return;
    }
    if (from_dump) {
      if (auto held = records_of_pending_.find(key); held != records_of_pending_.end())
        issued.insert(issued.begin(), held->second.begin(), held->second.end());
    }
    auto known = mismatches_.find(key.pg);
    const bool merge = from_dump && known != mismatches_.end() && known->second.key == key;
    if (issued.size() < 2 && !merge) return;
    // The trace's records first (they are kept over a dump's entry of the same rank), then
    // the dump entries of ranks that never completed the collective.
    if (merge)
      issued.insert(issued.begin(), known->second.issued.begin(), known->second.issued.end());
    issued = OnePerRank(std::move(issued));
    if (!from_dump) NoteSites(key, issued);
    std::vector<std::pair<int, int>> values;
    for (const Issued& i : issued) values.emplace_back(i.rank, i.signature);
    std::vector<RankGroup<int>> groups = GroupRanks(values);
    if (groups.size() < 2) {
      NoteAgreed(key, groups.front().value);
      CheckPeerCounts(key, std::move(issued), from_dump);
      return;
    }

    auto [it, fresh] = mismatches_.try_emplace(key.pg);
    PgMismatch& m = it->second;
    if (!CountKeepingFirst(&m, fresh, merge, key)) return;
    m.key = key;
    m.from_dump = from_dump && !merge;
    m.issued = issued;
    m.step = issued.front().step;
    for (const Issued& i : issued) m.step = std::min(m.step, i.step);
    m.group_tags.assign(groups.size(), {});
    for (size_t g = 0; g < groups.size(); ++g) {
      for (const Issued& i : issued) {
        if (i.signature != groups[g].value) continue;
        auto& tags = m.group_tags[g];
        if (std::find(tags.begin(), tags.end(), i.tag) == tags.end()) tags.push_back(i.tag);
      }
    }
    m.groups = std::move(groups);
  }

  // Every rank of `key` issued `signature`: it is one the group knows from there on.
  void NoteAgreed(const CollectiveKey& key, int signature) {
    auto [it, fresh] = agreed_[key.pg].try_emplace(signature, key.seq);
    if (!fresh) it->second = std::min(it->second, key.seq);
  }

  // Sets `m->basis` and `m->verdict`, and puts the reference group first when history
  // chose it.
  void ChooseReference(PgMismatch* m) const {
    m->verdict = JudgeSplit(m->groups);
    if (m->verdict.majority) {
      m->basis = SplitBasis::kMajority;
      return;
    }
    m->basis = SplitBasis::kNone;
    auto group = agreed_.find(m->key.pg);
    if (m->groups.size() != 2 || group == agreed_.end()) return;
    // The seq at which every rank agreed on side i's signature, before this one.
    auto agreed_at = [&](size_t i) -> std::optional<int64_t> {
      auto it = group->second.find(m->groups[i].value);
      if (it == group->second.end() || it->second >= m->key.seq) return std::nullopt;
      return it->second;
    };
    const std::optional<int64_t> agreed[] = {agreed_at(0), agreed_at(1)};
    const std::optional<size_t> side =
        SideHistoryVouchesFor({agreed[0].has_value(), agreed[1].has_value()});
    if (!side) return;
    if (*side == 1) {
      std::swap(m->groups[0], m->groups[1]);
      std::swap(m->group_tags[0], m->group_tags[1]);
    }
    m->basis = SplitBasis::kHistory;
    m->verdict = {OddRanks(m->groups), m->groups.front().ranks, true};
    m->agreed_seq = *agreed[*side];
  }

  // The same op and dtype on every rank: now what each sends to each peer against what that
  // peer expects from it.
  void CheckPeerCounts(const CollectiveKey& key, std::vector<Issued> issued, bool from_dump) {
    auto known = count_mismatches_.find(key.pg);
    const bool merge = from_dump && known != count_mismatches_.end() && known->second.key == key;
    if (merge) {  // the traces' records of this collective, then the dumps' pending entries
      issued.insert(issued.begin(), known->second.issued.begin(), known->second.issued.end());
      issued = OnePerRank(std::move(issued));
    }
    std::map<int, const trace::PeerCounts*> counts;
    for (const Issued& i : issued)
      if (i.counts) counts.emplace(i.rank, i.counts.get());
    if (counts.size() < 2) return;
    std::vector<CountPair> pairs = DisagreeingPairs(counts);
    if (pairs.empty()) return;

    auto [it, fresh] = count_mismatches_.try_emplace(key.pg);
    PgCountMismatch& m = it->second;
    if (!CountKeepingFirst(&m, fresh, merge, key)) return;
    m.key = key;
    m.from_dump = from_dump && !merge;
    m.signature = issued.front().signature;
    m.step = issued.front().step;
    for (const Issued& i : issued) m.step = std::min(m.step, i.step);
    m.verdict = JudgePairs(pairs);
    m.pairs = std::move(pairs);
    m.issued = std::move(issued);
  }

  Finding MakeFinding(const PgCountMismatch& m) const {
    Finding f;
    f.kind = std::string(kind::kCollectiveMismatch);
    f.severity = Severity::kError;
    f.ranks = m.verdict.named;
    f.step = m.step;
    f.subject = "pg " + std::to_string(m.key.pg) + " seq " + std::to_string(m.key.seq);
    const Signature& s = sigs_[m.signature];
    const CountPair& first = m.pairs.front();
    std::string what =
        first.from == first.to
            ? "rank " + std::to_string(first.from) + " sends itself " + std::to_string(first.sent) +
                  " elements but expects " + std::to_string(first.expected)
            : "rank " + std::to_string(first.from) + " sends " + std::to_string(first.sent) +
                  " elements to rank " + std::to_string(first.to) + ", which expects " +
                  std::to_string(first.expected) + " from it";
    f.summary = "at " + *f.subject + " (step " + std::to_string(m.step) + ") " + s.op +
                (s.dtype.empty() ? "" : " " + s.dtype) + " with per-peer sizes: " + what;
    if (m.pairs.size() > 1)
      f.summary += "; " + std::to_string(m.pairs.size() - 1) + " more pair" +
                   (m.pairs.size() > 2 ? "s disagree" : " disagrees");
    f.summary += m.verdict.majority
                     ? "; " + OnRanks(m.verdict.named) + " disagree" +
                           (m.verdict.named.size() == 1 ? "s" : "") + " with the most peers"
                     : " (no majority: every rank in a disagreeing pair is in as many, and "
                       "nothing in the traces says which side computed its sizes wrong)";
    if (m.count > 1) {
      f.summary += "; " + std::to_string(m.count - 1) + " later collective" +
                   (m.count > 2 ? "s" : "") + " of pg " + std::to_string(m.key.pg) + " differ too";
    }
    JsonValue pairs = JsonValue::Array();
    for (size_t i = 0; i < m.pairs.size() && i < kMaxPairsListed; ++i) {
      JsonValue p = JsonValue::Object();
      p.Set("from", static_cast<int64_t>(m.pairs[i].from));
      p.Set("to", static_cast<int64_t>(m.pairs[i].to));
      p.Set("sent", m.pairs[i].sent);
      p.Set("expected", m.pairs[i].expected);
      pairs.Push(std::move(p));
    }
    JsonValue& e = f.evidence;
    e.Set("pg", m.key.pg);
    e.Set("seq", m.key.seq);
    e.Set("step", m.step);
    e.Set("op", s.op);
    e.Set("dtype", s.dtype);
    e.Set("pairs", std::move(pairs));
    e.Set("disagreeing_pairs", static_cast<int64_t>(m.pairs.size()));
    e.Set("mismatched_collectives", m.count);
    e.Set("last_mismatched_seq", m.last_seq);
    e.Set("source", m.from_dump ? "flight-dump" : "trace");
    e.Set("majority", m.verdict.majority);
    f.hint =
        "The ranks disagree on how many elements go from one to another in this all-to-all: "
        "each rank's input split sizes must equal, peer by peer, what the peers pass as their "
        "output split sizes. The sizes usually come from a count exchanged one collective "
        "earlier (an MoE router's tokens per expert): look at how the named ranks computed "
        "theirs at step " +
        std::to_string(m.step) +
        " (a stale count, a capacity clamp applied on one side only, "
        "a dropped token not subtracted).";
    return f;
  }

  // ", as every rank did at pg 0 seq 16 (the ranks split 1 against 1, and rank 1's call is
  // one the group never issued before)", for a summary; "the call of ranks 2,3 is one" when
  // the odd side has more than one rank.
  std::string HistoryText(const PgMismatch& m) const {
    const std::vector<int>& odd = m.groups.back().ranks;
    const std::string whose_call =
        odd.size() == 1 ? OnRanks(odd) + "'s call" : "the call of " + OnRanks(odd);
    return ", as every rank did at pg " + std::to_string(m.key.pg) + " seq " +
           std::to_string(m.agreed_seq) + " (the ranks split " +
           std::to_string(m.groups.front().ranks.size()) + " against " +
           std::to_string(odd.size()) + ", and " + whose_call +
           " is one the group never issued before)";
  }

  std::string SignatureText(int id, const std::vector<int>& tags) const {
    const Signature& s = sigs_[id];
    std::string text = (s.op.empty() ? "(no op)" : s.op) + (s.dtype.empty() ? "" : " " + s.dtype) +
                       (s.n == kPerPeer       ? std::string(" (per-peer sizes)")
                        : s.n == kNotRecorded ? std::string(" n=?")
                                              : " n=" + std::to_string(s.n));
    if (!tags.empty() && !tags_[tags.front()].empty())
      text += " (" + tags_[tags.front()] + (tags.size() > 1 ? ", ..." : "") + ")";
    return text;
  }

  Finding MakeFinding(const PgMismatch& m) const {
    Finding f;
    f.kind = std::string(kind::kCollectiveMismatch);
    f.severity = Severity::kError;
    f.ranks = m.verdict.named;
    f.step = m.step;
    f.subject = "pg " + std::to_string(m.key.pg) + " seq " + std::to_string(m.key.seq);

    const RankGroup<int>& ref = m.groups.front();
    std::string odd;
    for (size_t g = 1; g < m.groups.size() && g <= 2; ++g) {
      odd += (g > 1 ? ", " : "") + OnRanks(m.groups[g].ranks) + " issued " +
             SignatureText(m.groups[g].value, m.group_tags[g]);
    }
    if (m.groups.size() > 3) odd += ", and " + std::to_string(m.groups.size() - 3) + " more";
    f.summary =
        "at " + *f.subject + " (step " + std::to_string(m.step) + ") " + odd + " where " +
        OnRanks(ref.ranks) + " issued " + SignatureText(ref.value, m.group_tags[0]) +
        (m.basis == SplitBasis::kHistory ? HistoryText(m) : NoMajorityText(m.groups, m.verdict));
    if (m.count > 1) {
      f.summary += "; " + std::to_string(m.count - 1) + " later collective" +
                   (m.count > 2 ? "s" : "") + " of pg " + std::to_string(m.key.pg) + " differ too";
    }

    JsonValue groups = JsonValue::Array();
    for (size_t g = 0; g < m.groups.size() && g < kMaxGroupsListed; ++g) {
      const Signature& s = sigs_[m.groups[g].value];
      JsonValue v = JsonValue::Object();
      v.Set("op", s.op);
      v.Set("dtype", s.dtype);
      v.Set("n", s.n < 0 ? JsonValue() : JsonValue(s.n));
      if (s.n == kPerPeer) v.Set("per_peer", true);
      JsonValue tags = JsonValue::Array();
      for (int t : m.group_tags[g]) tags.Push(tags_[t]);
      v.Set("tags", std::move(tags));
      v.Set("ranks", RankList(m.groups[g].ranks));
      v.Set("count", static_cast<int64_t>(m.groups[g].ranks.size()));
      groups.Push(std::move(v));
    }
    JsonValue& e = f.evidence;
    e.Set("pg", m.key.pg);
    e.Set("seq", m.key.seq);
    e.Set("step", m.step);
    e.Set("groups", std::move(groups));
    e.Set("distinct_signatures", static_cast<int64_t>(m.groups.size()));
    e.Set("mismatched_collectives", m.count);
    e.Set("last_mismatched_seq", m.last_seq);
    e.Set("source", m.from_dump ? "flight-dump" : "trace");
    e.Set("majority", m.verdict.majority);
    e.Set("basis", SplitBasisName(m.basis));
    if (m.basis == SplitBasis::kHistory) e.Set("agreed_seq", m.agreed_seq);
    f.hint =
        "The ranks' code paths diverged before this collective: a data-dependent branch or an "
        "`if rank == ...` issued a collective on some ranks only, or tensors of different "
        "shapes (an uneven last batch, variable-length inputs, a parameter that exists on some "
        "ranks only) went into the same collective. Look at what the odd ranks did at step " +
        std::to_string(m.step) + ", just before seq " + std::to_string(m.key.seq) +
        " (the tags say what each collective was for).";
    return f;
  }

  void NoteSites(const CollectiveKey& key, const std::vector<Issued>& issued) {
    std::vector<StreamParting::Seen> seen;
    seen.reserve(issued.size());
    for (const Issued& i : issued) seen.push_back({i.rank, i.site, i.step, i.signature});
    parting_.Note(key.pg, key.seq, seen);
  }

  // "the allreduce at train.py:35 (step 5)"
  std::string SideText(const StreamParting::Side& s, bool the_one) const {
    const std::string& op = sigs_[s.signature].op;
    return (the_one ? "the one" : "the " + (op.empty() ? std::string("collective") : op)) + " at " +
           sites_.Short(s.site) + " (step " + std::to_string(s.step) + ")";
  }

  // What the parting says, in words: who issued what where the others issued what.
  std::string PartingText(const StreamParting::Parting& p) const {
    const StreamParting::Side& ref = p.sides.front();
    const std::string& op = sigs_[ref.signature].op;
    if (p.how == StreamParting::How::kUndecided) {
      std::string text = "the ranks issued pg " + std::to_string(p.pg) + " seq " +
                         std::to_string(p.seq) + " from different lines:";
      for (size_t i = 0; i < p.sides.size(); ++i)
        text += (i ? ";" : "") + std::string(" ") + OnRanks(p.sides[i].ranks) + " " +
                SideText(p.sides[i], false);
      return text +
             " (no majority, and nothing before it says which side left the group's pattern): "
             "one side skipped or added a collective there, and from there the ranks' "
             "collectives paired wrong ones";
    }
    const StreamParting::Side& odd = p.sides.back();
    const bool one = p.named.size() == 1;
    const std::string who = OnRanks(p.named);
    std::string text = who + " issued " + SideText(odd, false) + " where " + OnRanks(ref.ranks) +
                       " issued " + SideText(ref, true) + ": " + who;
    text += p.how == StreamParting::How::kSkipped
                ? " skipped that " + (op.empty() ? std::string("collective") : op)
                : " issued one more collective there";
    text += std::string(", and from there ") + (one ? "its" : "their") +
            " collectives paired with the others' wrong ones";
    return text;
  }

  trace::JsonValue PartingEvidence(const StreamParting::Parting& p) const {
    JsonValue sides = JsonValue::Array();
    for (const StreamParting::Side& s : p.sides) {
      JsonValue v = JsonValue::Object();
      v.Set("ranks", RankList(s.ranks));
      v.Set("file", sites_.file(s.site));
      v.Set("line", sites_.line(s.site));
      v.Set("fn", sites_.fn(s.site));
      v.Set("step", s.step);
      v.Set("op", sigs_[s.signature].op);
      const int64_t n = sigs_[s.signature].n;
      v.Set("n", n < 0 ? JsonValue() : JsonValue(n));
      sides.Push(std::move(v));
    }
    JsonValue e = JsonValue::Object();
    e.Set("pg", static_cast<int64_t>(p.pg));
    e.Set("seq", p.seq);
    e.Set("sides", std::move(sides));
    e.Set("culprits", RankList(p.named));
    e.Set("how", p.how == StreamParting::How::kSkipped ? "skipped"
                 : p.how == StreamParting::How::kAdded ? "added"
                                                       : "undecided");
    e.Set("majority", p.majority);
    e.Set("later_parted", p.later);
    e.Set("text", PartingText(p));
    return e;
  }

  // A signature mismatch on a group whose streams had parted at or before it.
  void AddParting(const StreamParting::Parting& p, Finding* f) const {
    f->evidence.Set("parted_at", PartingEvidence(p));
    f->summary += "; the streams parted at pg " + std::to_string(p.pg) + " seq " +
                  std::to_string(p.seq) + ": " + PartingText(p);
  }

  // Ranks that agree on every op and size, but not on the lines that issued them.
  Finding MakeFinding(const StreamParting::Parting& p) const {
    Finding f;
    f.kind = std::string(kind::kCollectiveMismatch);
    f.severity = Severity::kError;
    f.ranks = p.named;
    f.step = p.sides.front().step;
    for (const StreamParting::Side& s : p.sides) f.step = std::min(*f.step, s.step);
    f.subject = "pg " + std::to_string(p.pg) + " seq " + std::to_string(p.seq);
    f.summary = "the ranks' collectives parted at " + *f.subject + ": " + PartingText(p);
    if (p.later > 0) {
      f.summary += "; " + std::to_string(p.later) + " later collective" + (p.later > 1 ? "s" : "") +
                   " of pg " + std::to_string(p.pg) + " paired wrong too";
    }
    JsonValue& e = f.evidence;
    e.Set("pg", static_cast<int64_t>(p.pg));
    e.Set("seq", p.seq);
    e.Set("step", *f.step);
    e.Set("parted_at", PartingEvidence(p));
    e.Set("source", "trace");
    e.Set("majority", p.majority || p.how != StreamParting::How::kUndecided);
    f.hint =
        "Every rank must issue the same collectives in the same order: the named ranks left the "
        "others' sequence at the line shown (a rank-dependent `if` around a collective — "
        "logging, metrics, a health check — or a `continue`/`break` that one rank took). The "
        "ops matched in size, so the backend paired them without complaint, each with another "
        "collective's tensor; the job fails or hangs only where one rank runs out of "
        "collectives. Make the collective unconditional, or take the branch on every rank.";
    return f;
  }

  CollectiveWindow<Issued> window_;
  RunSites sites_;
  StreamParting parting_;
  InternTable<Signature, SignatureLess> sigs_;
  InternTable<std::string, std::less<>> tags_;
  std::vector<PendingEntry> pending_;
  std::set<CollectiveKey> pending_keys_;  // the (pg, seq) of every pending dump entry
  // The traces' records of each pending_keys_ collective.
  std::map<CollectiveKey, std::vector<Issued>> records_of_pending_;
  std::map<int, PgMismatch> mismatches_;
  std::map<int, PgCountMismatch> count_mismatches_;
  // pg -> signature -> the first seq at which every rank that recorded it issued it.
  std::map<int, std::map<int, int64_t>> agreed_;
  P2PMessages messages_;
};

}  // namespace

std::unique_ptr<Analyzer> CreateCollectiveMismatchAnalyzer() {
  return std::make_unique<CollectiveMismatchAnalyzer>();
}

}  // namespace dsdiag::analyzers
