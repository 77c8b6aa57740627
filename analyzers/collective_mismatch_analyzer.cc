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
// The ranks are grouped by signature (rank_groups.h): the largest group is the reference,
// the others are odd. Error. One finding per process group: its first mismatch (lowest seq)
// in full, plus how many later collectives of the group differ too — after one extra or
// missing collective every later seq is shifted, so the first is the one that matters.
// The tag (what the op is for) is shown but not compared: two buckets of equal size may
// legitimately swap order between runs, never between ranks, but that is not visible here.
#include <simdjson.h>

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "analyzers/analyzer_factories.h"
#include "analyzers/collective_window.h"
#include "analyzers/finding_kinds.h"
#include "analyzers/flight_dump.h"
#include "analyzers/rank_groups.h"
#include "trace/record_types.h"
#include "trace/trace_reader.h"

namespace dsdiag::analyzers {
namespace {

using trace::JsonValue;

constexpr size_t kMaxGroupsListed = 4;
constexpr size_t kMaxRanksListed = 32;

// What the backend pairs: op, dtype and element count (n; -1 when not recorded).
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
};

// The first mismatch of a process group, and how many followed.
struct PgMismatch {
  CollectiveKey key;
  int64_t step = 0;
  std::vector<RankGroup<int>> groups;        // by signature id, reference first
  std::vector<std::vector<int>> group_tags;  // tag ids per group
  int64_t count = 0;
  int64_t last_seq = 0;
  bool from_dump = false;
};

// What the intern maps keep of a key that points into a record.
Signature ToOwned(const SignatureView& v) { return {std::string(v.op), std::string(v.dtype), v.n}; }
std::string ToOwned(std::string_view v) { return std::string(v); }

// The id of `key` in *ids, given the next one when new.
template <typename Owned, typename Map, typename Key>
int Intern(Map* ids, std::vector<const Owned*>* by_id, const Key& key) {
  auto it = ids->find(key);
  if (it == ids->end()) {
    it = ids->emplace(ToOwned(key), static_cast<int>(by_id->size())).first;
    by_id->push_back(&it->first);
  }
  return it->second;
}

// The fields of a `coll` record read here, as Record::Int / Str would give them (the first
// member of a name counts), in one pass over the members rather than a scan per field.
struct CollFields {
  std::optional<int64_t> pg, seq, n;
  std::optional<std::string_view> op, dtype, tag;
};

template <typename T>
void TakeField(simdjson::dom::element value, std::optional<T>* out, bool* seen) {
  if (*seen) return;
  *seen = true;
  T v;
  if (!value.get(v)) *out = v;
}

CollFields ReadCollFields(const trace::Record& r) {
  CollFields f;
  bool pg = false, seq = false, n = false, op = false, dtype = false, tag = false;
  for (simdjson::dom::key_value_pair kv : r.object()) {
    const std::string_view k = kv.key;
    if (k == "pg") {
      TakeField(kv.value, &f.pg, &pg);
    } else if (k == "seq") {
      TakeField(kv.value, &f.seq, &seq);
    } else if (k == "n") {
      TakeField(kv.value, &f.n, &n);
    } else if (k == "op") {
      TakeField(kv.value, &f.op, &op);
    } else if (k == "dtype") {
      TakeField(kv.value, &f.dtype, &dtype);
    } else if (k == "tag") {
      TakeField(kv.value, &f.tag, &tag);
    }
  }
  return f;
}

JsonValue RankList(const std::vector<int>& ranks) {
  JsonValue list = JsonValue::Array();
  for (size_t i = 0; i < ranks.size() && i < kMaxRanksListed; ++i) list.Push(ranks[i]);
  return list;
}

std::string OnRanks(const std::vector<int>& ranks) {
  return (ranks.size() == 1 ? "rank " : "ranks ") + FormatRankRanges(ranks);
}

class CollectiveMismatchAnalyzer : public Analyzer {
 public:
  std::string_view name() const override { return kind::kCollectiveMismatch; }
  std::vector<std::string_view> record_types() const override { return {trace::rec::kCollective}; }

  void Begin(const RunContext& run) override {
    // Only the pending entries: completed ones are in the traces already. A dump that
    // cannot be read is the hang analyzer's to report.
    for (const FlightDump& d : run.flight_dumps) {
      auto dump = ReadFlightDump(d.path, d.file_name, nullptr);
      if (!dump || (!dump->run_id.empty() && dump->run_id != run.run_id)) continue;
      for (const FlightEntry& e : dump->entries) {
        if (!e.pending()) continue;
        const SignatureView sig{e.op, e.dtype, e.n.value_or(-1)};
        const Issued issued{d.rank, Intern(&sigs_, &sig_by_id_, sig),
                            Intern(&tags_, &tag_by_id_, std::string_view(e.tag)),
                            e.step.value_or(0)};
        pending_.push_back({CollectiveKey{e.pg, e.seq}, issued});
      }
    }
  }

  void OnRecord(const RankInfo& rank, const trace::Record& r) override {
    if (r.type() != trace::rec::kCollective) return;
    const CollFields f = ReadCollFields(r);
    if (!f.pg || !f.seq) return;
    const auto pg = f.pg;
    const auto seq = f.seq;
    const SignatureView sig{f.op.value_or(""), f.dtype.value_or(""), f.n.value_or(-1)};
    const std::string_view tag = f.tag.value_or("");
    window_.Add(
        {static_cast<int>(*pg), *seq}, r.step(),
        {rank.rank, Intern(&sigs_, &sig_by_id_, sig), Intern(&tags_, &tag_by_id_, tag), r.step()});
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
    for (const auto& [pg, m] : mismatches_) findings->push_back(MakeFinding(m));
  }

 private:
  struct PendingEntry {
    CollectiveKey key;
    Issued issued;
  };

  void Check(const CollectiveKey& key, const CollectiveSlot<Issued>& slot, bool from_dump) {
    if (slot.entries.size() < 2) return;
    std::vector<Issued> issued = slot.entries;
    std::stable_sort(issued.begin(), issued.end(),
                     [](const Issued& a, const Issued& b) { return a.rank < b.rank; });
    issued.erase(std::unique(issued.begin(), issued.end(),
                             [](const Issued& a, const Issued& b) { return a.rank == b.rank; }),
                 issued.end());
    std::vector<std::pair<int, int>> values;
    for (const Issued& i : issued) values.emplace_back(i.rank, i.signature);
    std::vector<RankGroup<int>> groups = GroupRanks(values);
    if (groups.size() < 2) return;

    auto [it, fresh] = mismatches_.try_emplace(key.pg);
    PgMismatch& m = it->second;
    ++m.count;
    m.last_seq = std::max(m.last_seq, key.seq);
    if (!fresh && m.key.seq <= key.seq) return;
    m.key = key;
    m.from_dump = from_dump;
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

  std::string SignatureText(int id, const std::vector<int>& tags) const {
    const Signature& s = *sig_by_id_[id];
    std::string text = (s.op.empty() ? "(no op)" : s.op) + (s.dtype.empty() ? "" : " " + s.dtype) +
                       " n=" + (s.n < 0 ? std::string("?") : std::to_string(s.n));
    if (!tags.empty() && !tag_by_id_[tags.front()]->empty())
      text += " (" + *tag_by_id_[tags.front()] + (tags.size() > 1 ? ", ..." : "") + ")";
    return text;
  }

  Finding MakeFinding(const PgMismatch& m) const {
    Finding f;
    f.kind = std::string(kind::kCollectiveMismatch);
    f.severity = Severity::kError;
    f.ranks = OddRanks(m.groups);
    f.step = m.step;
    f.subject = "pg " + std::to_string(m.key.pg) + " seq " + std::to_string(m.key.seq);

    const RankGroup<int>& ref = m.groups.front();
    std::string odd;
    for (size_t g = 1; g < m.groups.size() && g <= 2; ++g) {
      odd += (g > 1 ? ", " : "") + OnRanks(m.groups[g].ranks) + " issued " +
             SignatureText(m.groups[g].value, m.group_tags[g]);
    }
    if (m.groups.size() > 3) odd += ", and " + std::to_string(m.groups.size() - 3) + " more";
    f.summary = "at " + *f.subject + " (step " + std::to_string(m.step) + ") " + odd + " where " +
                OnRanks(ref.ranks) + " issued " + SignatureText(ref.value, m.group_tags[0]);
    if (m.count > 1) {
      f.summary += "; " + std::to_string(m.count - 1) + " later collective" +
                   (m.count > 2 ? "s" : "") + " of pg " + std::to_string(m.key.pg) + " differ too";
    }

    JsonValue groups = JsonValue::Array();
    for (size_t g = 0; g < m.groups.size() && g < kMaxGroupsListed; ++g) {
      const Signature& s = *sig_by_id_[m.groups[g].value];
      JsonValue v = JsonValue::Object();
      v.Set("op", s.op);
      v.Set("dtype", s.dtype);
      v.Set("n", s.n < 0 ? JsonValue() : JsonValue(s.n));
      JsonValue tags = JsonValue::Array();
      for (int t : m.group_tags[g]) tags.Push(*tag_by_id_[t]);
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
    f.hint =
        "The ranks' code paths diverged before this collective: a data-dependent branch or an "
        "`if rank == ...` issued a collective on some ranks only, or tensors of different "
        "shapes (an uneven last batch, variable-length inputs, a parameter that exists on some "
        "ranks only) went into the same collective. Look at what the odd ranks did at step " +
        std::to_string(m.step) + ", just before seq " + std::to_string(m.key.seq) +
        " (the tags say what each collective was for).";
    return f;
  }

  CollectiveWindow<Issued> window_;
  std::map<Signature, int, SignatureLess> sigs_;
  std::vector<const Signature*> sig_by_id_;
  std::map<std::string, int, std::less<>> tags_;
  std::vector<const std::string*> tag_by_id_;
  std::vector<PendingEntry> pending_;
  std::map<int, PgMismatch> mismatches_;
};

}  // namespace

std::unique_ptr<Analyzer> CreateCollectiveMismatchAnalyzer() {
  return std::make_unique<CollectiveMismatchAnalyzer>();
}

}  // namespace dsdiag::analyzers
