#include "analyzers/torch_fr/fr_mismatch.h"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "analyzers/framework/finding_kinds.h"
#include "analyzers/kinds/common/rank_groups.h"
#include "analyzers/kinds/common/split_verdict.h"

namespace dsdiag::analyzers::torch_fr {
namespace {

using trace::JsonValue;

// What every member must agree on at a sequence number: the op, the input tensors' sizes
// and dtypes (indices into the run's strings).
struct Signature {
  int32_t op = 0, sizes = 0, dtypes = 0;
  int64_t numel = 0;

  bool operator==(const Signature& o) const {
    return op == o.op && sizes == o.sizes && dtypes == o.dtypes;
  }
  bool operator<(const Signature& o) const {
    return std::tie(op, sizes, dtypes) < std::tie(o.op, o.sizes, o.dtypes);
  }
};

// "all_reduce of 5 elements Float".
std::string SignatureText(const FrRun& run, const Signature& s) {
  std::string text =
      run.Str(s.op) + " of " + std::to_string(s.numel) + (s.numel == 1 ? " element" : " elements");
  if (!run.Str(s.dtypes).empty()) text += " " + run.Str(s.dtypes);
  return text;
}

Signature SignatureOf(const FrEntry& e) { return Signature{e.op, e.sizes, e.dtypes, e.numel}; }

// "[[4],[2,3]]" (FrEntry::sizes) as a JSON array.
JsonValue SizesJson(std::string_view text) {
  JsonValue all = JsonValue::Array();
  JsonValue shape = JsonValue::Array();
  int64_t value = 0;
  bool in_number = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c >= '0' && c <= '9') {
      value = value * 10 + (c - '0');
      in_number = true;
      continue;
    }
    if (in_number) shape.Push(value);
    in_number = false;
    value = 0;
    if (c == ']' && i + 1 < text.size()) {  // a shape's end, not the list's
      all.Push(std::move(shape));
      shape = JsonValue::Array();
    }
  }
  return all;
}

struct AtSeq {
  int64_t seq = 0;
  std::map<int, Signature> by_rank;
  std::map<int, const FrEntry*> entries;
};

// Every seq that at least two ranks recorded, in order.
std::vector<AtSeq> SharedSeqs(const FrGroup& g) {
  std::map<int64_t, AtSeq> at;
  for (const FrRankOps& r : g.ranks)
    for (const FrOp& op : r.ops) {
      AtSeq& a = at[op.seq];
      a.seq = op.seq;
      a.by_rank[r.rank] = SignatureOf(*op.entry);
      a.entries[r.rank] = op.entry;
    }
  std::vector<AtSeq> out;
  for (auto& [seq, a] : at)
    if (a.by_rank.size() >= 2) out.push_back(std::move(a));
  return out;
}

bool Agree(const AtSeq& a) {
  for (const auto& [rank, s] : a.by_rank)
    if (!(s == a.by_rank.begin()->second)) return false;
  return true;
}

struct Verdict {
  std::vector<int> odd;
  SplitBasis basis = SplitBasis::kNone;
  std::string expected;  // the reference side's call, where there is one
};

// As over traces (split_verdict.h): the largest side when it is larger than every other,
// else of two sides the one the group's history vouches for, else every rank is named.
Verdict Judge(const FrRun& run, const AtSeq& a, const std::set<Signature>& agreed_before) {
  const std::vector<RankGroup<Signature>> groups =
      GroupRanks(std::vector<std::pair<int, Signature>>(a.by_rank.begin(), a.by_rank.end()));
  const SplitVerdict split = JudgeSplit(groups);
  Verdict v;
  v.odd = split.named;
  if (split.majority) {
    v.basis = SplitBasis::kMajority;
    v.expected = SignatureText(run, groups.front().value);
    return v;
  }
  std::vector<bool> known;
  for (const RankGroup<Signature>& g : groups) known.push_back(agreed_before.count(g.value) > 0);
  if (const std::optional<size_t> side = SideHistoryVouchesFor(known)) {
    v.basis = SplitBasis::kHistory;
    v.expected = SignatureText(run, groups[*side].value);
    v.odd = groups[1 - *side].ranks;
  }
  return v;
}

JsonValue RankRow(int rank, const FrEntry& e, const FrRun& run) {
  JsonValue row = JsonValue::Object();
  row.Set("rank", rank);
  if (const FrRankDump* d = run.DumpOf(rank)) row.Set("file", d->file_name);
  row.Set("op", run.Str(e.op));
  row.Set("input_sizes", SizesJson(run.Str(e.sizes)));
  JsonValue dtypes = JsonValue::Array();
  std::string_view all = run.Str(e.dtypes);
  while (!all.empty()) {
    const size_t comma = all.find(',');
    dtypes.Push(std::string(all.substr(0, comma)));
    all = comma == std::string_view::npos ? std::string_view() : all.substr(comma + 1);
  }
  row.Set("input_dtypes", std::move(dtypes));
  row.Set("profiling_name", run.Str(e.profiling_name));
  row.Set("python_where", run.Str(e.where));
  return row;
}

Finding MakeFinding(const FrRun& run, const FrGroup& g, const AtSeq& a, const Verdict& v,
                    int later) {
  Finding f;
  f.kind = std::string(kind::kCollectiveMismatch);
  f.severity = Severity::kError;
  f.ranks = v.odd;
  const std::string what = g.Label() + " seq " + std::to_string(a.seq);
  f.subject = what;
  const int first_odd = v.odd.front();
  const Signature& odd_sig = a.by_rank.at(first_odd);
  const std::string where = ShortWhere(run.Str(a.entries.at(first_odd)->where));
  if (v.basis == SplitBasis::kNone) {
    f.summary = "the ranks disagree at " + what + " and neither a majority nor the group's " +
                "history says which is right: ";
    bool first = true;
    for (const auto& [rank, s] : a.by_rank) {
      f.summary += (first ? "" : "; ") + std::string("rank ") + std::to_string(rank) + " " +
                   SignatureText(run, s);
      first = false;
    }
  } else {
    f.summary = "rank" + std::string(v.odd.size() > 1 ? "s " : " ") + FormatRankRanges(v.odd) +
                " issued " + SignatureText(run, odd_sig) + " at " + what + " where the " +
                (v.basis == SplitBasis::kMajority ? "others issued " : "group's history says ") +
                v.expected + (where.empty() ? "" : " (" + where + ")");
  }
  JsonValue ev = JsonValue::Object();
  ev.Set("source", "torch-flight-recorder");
  ev.Set("group", g.name());
  ev.Set("group_desc", g.desc());
  ev.Set("seq", a.seq);
  ev.Set("basis", SplitBasisName(v.basis));
  if (!v.expected.empty()) ev.Set("expected", v.expected);
  JsonValue rows = JsonValue::Array();
  for (const auto& [rank, s] : a.by_rank) rows.Push(RankRow(rank, *a.entries.at(rank), run));
  ev.Set("ranks", std::move(rows));
  ev.Set("later_mismatches", later);
  f.evidence = std::move(ev);
  f.hint =
      "make every rank issue the same collectives in the same order with the same "
      "shapes and dtypes (the line above issued it on the odd rank); a size that depends "
      "on the rank's data needs padding or an all_gather of the sizes first";
  return f;
}

// The collective the dumped ranks of a group last issued, when ranks of the job left no dump
// and fewer than two dumps hold it (so nothing compares ranks there): the dumped ranks whose
// entry there differs from every earlier one issued from the same line.
struct Lone {
  int64_t seq = 0;
  std::map<int, const FrEntry*> odd;
  const FrEntry* before = nullptr;  // the line's earlier entry
};

std::optional<Lone> LoneChange(const FrRun& run, const FrGroup& g) {
  if (g.p2p() || !g.is_default() || run.missing_ranks.empty()) return std::nullopt;
  Lone lone;
  lone.seq = g.MaxSeq();
  int holders = 0;
  for (const FrRankOps& r : g.ranks) {
    const FrOp* last = r.Last();
    if (!last || last->seq != lone.seq) continue;
    ++holders;
    const FrEntry& e = *last->entry;
    if (run.Str(e.site).empty()) continue;
    const FrEntry* same_line = nullptr;
    bool line_agrees = true;
    for (const FrOp& op : r.ops) {
      if (op.seq >= lone.seq || op.entry->site != e.site) continue;
      line_agrees =
          line_agrees && (!same_line || SignatureOf(*same_line) == SignatureOf(*op.entry));
      same_line = op.entry;
    }
    if (same_line && line_agrees && !(SignatureOf(*same_line) == SignatureOf(e))) {
      lone.odd[r.rank] = &e;
      lone.before = same_line;
    }
  }
  if (holders >= 2 || lone.odd.empty()) return std::nullopt;
  return lone;
}

Finding LoneFinding(const FrRun& run, const FrGroup& g, const Lone& lone) {
  Finding f;
  f.kind = std::string(kind::kCollectiveMismatch);
  f.severity = Severity::kError;
  for (const auto& [rank, e] : lone.odd) f.ranks.push_back(rank);
  const FrEntry& e = *lone.odd.begin()->second;
  const std::string what = g.Label() + " seq " + std::to_string(lone.seq);
  f.subject = what;
  f.summary = "rank" + std::string(f.ranks.size() > 1 ? "s " : " ") + FormatRankRanges(f.ranks) +
              " issued " + SignatureText(run, SignatureOf(e)) + " at " + what + " (" +
              run.Str(e.site) + ") where every earlier collective of that line was " +
              SignatureText(run, SignatureOf(*lone.before)) + "; rank" +
              (run.missing_ranks.size() > 1 ? "s " : " ") + FormatRankRanges(run.missing_ranks) +
              ", which left no dump, ended in it: Gloo aborts a rank that receives more bytes "
              "than it posted";
  JsonValue ev = JsonValue::Object();
  ev.Set("source", "torch-flight-recorder");
  ev.Set("group", g.name());
  ev.Set("group_desc", g.desc());
  ev.Set("seq", lone.seq);
  ev.Set("basis", "call-site history");
  ev.Set("expected", SignatureText(run, SignatureOf(*lone.before)));
  JsonValue rows = JsonValue::Array();
  for (const auto& [rank, entry] : lone.odd) rows.Push(RankRow(rank, *entry, run));
  ev.Set("ranks", std::move(rows));
  JsonValue missing = JsonValue::Array();
  for (int r : run.missing_ranks) missing.Push(r);
  ev.Set("no_dump", std::move(missing));
  f.evidence = std::move(ev);
  f.hint =
      "make every rank issue the same shapes and dtypes from this line; a size that depends "
      "on the rank's data (an uneven last batch) needs padding or an all_gather of the sizes";
  return f;
}

}  // namespace

void FindMismatches(const FrRun& run, const std::vector<FrGroup>& groups,
                    std::vector<Finding>* findings) {
  for (const FrGroup& g : groups) {
    if (g.p2p()) continue;  // a send and its recv differ in op by design
    if (std::optional<Lone> lone = LoneChange(run, g)) {
      findings->push_back(LoneFinding(run, g, *lone));
      continue;
    }
    std::set<Signature> agreed;
    const std::vector<AtSeq> seqs = SharedSeqs(g);
    for (size_t i = 0; i < seqs.size(); ++i) {
      if (Agree(seqs[i])) {
        agreed.insert(seqs[i].by_rank.begin()->second);
        continue;
      }
      int later = 0;
      for (size_t j = i + 1; j < seqs.size(); ++j) later += Agree(seqs[j]) ? 0 : 1;
      findings->push_back(MakeFinding(run, g, seqs[i], Judge(run, seqs[i], agreed), later));
      break;
    }
  }
}

}  // namespace dsdiag::analyzers::torch_fr
