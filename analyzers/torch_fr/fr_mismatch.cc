#include "analyzers/torch_fr/fr_mismatch.h"

#include <map>
#include <set>
#include <string>
#include <tuple>

#include "analyzers/framework/finding_kinds.h"

namespace dsdiag::analyzers::torch_fr {
namespace {

using trace::JsonValue;

// What every member must agree on at a sequence number.
struct Signature {
  std::string op;
  std::vector<int64_t> numels;  // per input tensor
  std::vector<std::string> dtypes;

  bool operator==(const Signature& o) const {
    return op == o.op && numels == o.numels && dtypes == o.dtypes;
  }
  bool operator<(const Signature& o) const {
    return std::tie(op, numels, dtypes) < std::tie(o.op, o.numels, o.dtypes);
  }
  std::string Text() const {
    std::string text = op + " of ";
    for (size_t i = 0; i < numels.size(); ++i) text += (i ? "+" : "") + std::to_string(numels[i]);
    text += numels.size() == 1 && numels[0] == 1 ? " element" : " elements";
    if (!dtypes.empty()) {
      text += " ";
      for (size_t i = 0; i < dtypes.size(); ++i) text += (i ? "/" : "") + dtypes[i];
    }
    return text;
  }
};

Signature SignatureOf(const trace::TorchFrEntry& e) {
  Signature s;
  s.op = OpName(e);
  for (const auto& shape : e.input_sizes) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    s.numels.push_back(n);
  }
  s.dtypes = e.input_dtypes;
  return s;
}

struct AtSeq {
  int64_t seq = 0;
  std::map<int, Signature> by_rank;
  std::map<int, const trace::TorchFrEntry*> entries;
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
  std::string basis;  // "majority", "history", "none"
  std::string expected;
};

Verdict Judge(const AtSeq& a, const std::set<Signature>& agreed_before) {
  std::map<Signature, std::vector<int>> ranks_by;
  for (const auto& [rank, s] : a.by_rank) ranks_by[s].push_back(rank);
  Verdict v;
  for (const auto& [s, ranks] : ranks_by) {
    if (2 * ranks.size() > a.by_rank.size()) {
      v.basis = "majority";
      v.expected = s.Text();
      for (const auto& [other, other_ranks] : ranks_by)
        if (!(other == s)) v.odd.insert(v.odd.end(), other_ranks.begin(), other_ranks.end());
      return v;
    }
  }
  // No majority: the ranks sending what the group has sent before keep their word.
  std::vector<int> seen, unseen;
  std::string seen_text;
  for (const auto& [s, ranks] : ranks_by) {
    const bool known = agreed_before.count(s) > 0;
    (known ? seen : unseen).insert((known ? seen : unseen).end(), ranks.begin(), ranks.end());
    if (known) seen_text = s.Text();
  }
  if (!seen.empty() && !unseen.empty() && ranks_by.size() == 2) {
    v.basis = "history";
    v.expected = seen_text;
    v.odd = unseen;
    return v;
  }
  v.basis = "none";
  for (const auto& [rank, s] : a.by_rank) v.odd.push_back(rank);
  return v;
}

JsonValue RankRow(int rank, const Signature& s, const trace::TorchFrEntry& e, const FrRun& run) {
  JsonValue row = JsonValue::Object();
  row.Set("rank", rank);
  if (const FrRankDump* d = run.DumpOf(rank)) row.Set("file", d->file_name);
  row.Set("op", s.op);
  JsonValue sizes = JsonValue::Array();
  for (const auto& shape : e.input_sizes) {
    JsonValue dims = JsonValue::Array();
    for (int64_t d : shape) dims.Push(d);
    sizes.Push(std::move(dims));
  }
  row.Set("input_sizes", std::move(sizes));
  JsonValue dtypes = JsonValue::Array();
  for (const std::string& d : s.dtypes) dtypes.Push(d);
  row.Set("input_dtypes", std::move(dtypes));
  row.Set("profiling_name", e.profiling_name);
  row.Set("python_where", WhereIssued(e, /*full=*/true));
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
  const std::string where = WhereIssued(*a.entries.at(first_odd));
  if (v.basis == "none") {
    f.summary = "the ranks disagree at " + what + " and neither a majority nor the group's " +
                "history says which is right: ";
    bool first = true;
    for (const auto& [rank, s] : a.by_rank) {
      f.summary +=
          (first ? "" : "; ") + std::string("rank ") + std::to_string(rank) + " " + s.Text();
      first = false;
    }
  } else {
    f.summary = "rank" + std::string(v.odd.size() > 1 ? "s " : " ") + FormatRankRanges(v.odd) +
                " issued " + odd_sig.Text() + " at " + what + " where the " +
                (v.basis == "majority" ? "others issued " : "group's history says ") + v.expected +
                (where.empty() ? "" : " (" + where + ")");
  }
  JsonValue ev = JsonValue::Object();
  ev.Set("source", "torch-flight-recorder");
  ev.Set("group", g.name);
  ev.Set("group_desc", g.desc);
  ev.Set("seq", a.seq);
  ev.Set("basis", v.basis);
  if (!v.expected.empty()) ev.Set("expected", v.expected);
  JsonValue rows = JsonValue::Array();
  for (const auto& [rank, s] : a.by_rank) rows.Push(RankRow(rank, s, *a.entries.at(rank), run));
  ev.Set("ranks", std::move(rows));
  ev.Set("later_mismatches", later);
  f.evidence = std::move(ev);
  f.hint =
      "make every rank issue the same collectives in the same order with the same "
      "shapes and dtypes (the line above issued it on the odd rank); a size that depends "
      "on the rank's data needs padding or an all_gather of the sizes first";
  return f;
}

}  // namespace

void FindMismatches(const FrRun& run, const std::vector<FrGroup>& groups,
                    std::vector<Finding>* findings) {
  for (const FrGroup& g : groups) {
    if (g.p2p) continue;  // a send and its recv differ in op by design
    std::set<Signature> agreed;
    const std::vector<AtSeq> seqs = SharedSeqs(g);
    for (size_t i = 0; i < seqs.size(); ++i) {
      if (Agree(seqs[i])) {
        agreed.insert(seqs[i].by_rank.begin()->second);
        continue;
      }
      int later = 0;
      for (size_t j = i + 1; j < seqs.size(); ++j) later += Agree(seqs[j]) ? 0 : 1;
      findings->push_back(MakeFinding(run, g, seqs[i], Judge(seqs[i], agreed), later));
      break;
    }
  }
}

}  // namespace dsdiag::analyzers::torch_fr
