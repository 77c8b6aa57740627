#include "analyzers/torch_fr/fr_parting.h"

#include <algorithm>
#include <optional>
#include <set>

#include "analyzers/framework/finding_kinds.h"

namespace dsdiag::analyzers::torch_fr {
namespace {

using trace::JsonValue;
using BySite = std::map<int32_t, std::vector<int>>;  // call site -> ranks, in rank order

// Each seq that every member of the group recorded: the members' entries there.
std::map<int64_t, std::map<int, const FrEntry*>> SharedByAll(const FrGroup& g) {
  std::map<int64_t, std::map<int, const FrEntry*>> at;
  for (const FrRankOps& r : g.ranks)
    for (const FrOp& op : r.ops) at[op.seq][r.rank] = op.entry;
  for (auto it = at.begin(); it != at.end();)
    it = it->second.size() == g.ranks.size() ? std::next(it) : at.erase(it);
  return at;
}

bool SitesKnown(const FrRun& run, const std::map<int, const FrEntry*>& entries) {
  for (const auto& [rank, e] : entries)
    if (run.Str(e->site).empty()) return false;
  return true;
}

bool SameSite(const std::map<int, const FrEntry*>& entries) {
  for (const auto& [rank, e] : entries)
    if (e->site != entries.begin()->second->site) return false;
  return true;
}

bool SameSignature(const std::map<int, const FrEntry*>& entries) {
  const FrEntry* first = entries.begin()->second;
  for (const auto& [rank, e] : entries)
    if (e->op != first->op || e->sizes != first->sizes || e->dtypes != first->dtypes) return false;
  return true;
}

bool EndsUneven(const FrGroup& g) {
  std::set<int64_t> ends;
  for (const FrRankOps& r : g.ranks)
    if (const FrOp* last = r.Last()) ends.insert(last->seq);
  return ends.size() > 1;
}

int64_t LastSeq(const FrGroup& g, int rank) {
  const FrRankOps* r = g.Of(rank);
  return r && r->Last() ? r->Last()->seq : 0;
}

BySite RanksBySite(const std::map<int, const FrEntry*>& entries) {
  BySite by;
  for (const auto& [rank, e] : entries) by[e->site].push_back(rank);
  return by;
}

// The site a strict majority of the ranks share, if any.
std::optional<int32_t> MajoritySite(const BySite& by, size_t members) {
  for (const auto& [site, ranks] : by)
    if (2 * ranks.size() > members) return site;
  return std::nullopt;
}

// Which ranks broke the pattern, and by what.
void Judge(const std::map<int64_t, std::map<int, const FrEntry*>>& shared, int64_t seq,
           FrParting* p) {
  const auto& here = shared.at(seq);
  const BySite by = RanksBySite(here);
  std::optional<int32_t> kept = MajoritySite(by, here.size());
  p->basis = kept ? "majority" : "none";
  if (!kept && by.size() == 2) {
    // The successions of call sites every rank agreed on before the parting.
    std::set<std::pair<int32_t, int32_t>> agreed;
    std::optional<int32_t> previous;
    for (const auto& [s, entries] : shared) {
      if (s >= seq) break;
      const bool same = SameSite(entries);
      const int32_t site = entries.begin()->second->site;
      if (same && previous) agreed.insert({*previous, site});
      previous = same ? std::optional<int32_t>(site) : std::nullopt;
    }
    std::vector<int32_t> following;
    for (const auto& [site, ranks] : by)
      if (previous && agreed.count({*previous, site})) following.push_back(site);
    if (following.size() == 1) {
      kept = following.front();
      p->basis = "history";
    }
  }
  for (const auto& [site, ranks] : by)
    if (!kept || site != *kept) p->odd.insert(p->odd.end(), ranks.begin(), ranks.end());
  std::sort(p->odd.begin(), p->odd.end());
  p->how = "other";
  const auto next = shared.find(seq + 1);
  if (!kept || p->odd.empty() || next == shared.end()) return;
  const int odd = p->odd.front();
  int keeper = -1;
  for (const auto& [rank, e] : here)
    if (e->site == *kept) keeper = rank;
  const bool ahead = here.at(odd)->site == next->second.at(keeper)->site;
  const bool behind = next->second.at(odd)->site == *kept;
  // A pattern of period two (gradients, metrics, ...) looks both ways: a rank that skipped
  // one ends its stream short, one that added one ends it long.
  const int64_t odd_end = LastSeq(*p->group, odd), keeper_end = LastSeq(*p->group, keeper);
  if (ahead && (!behind || odd_end < keeper_end))
    p->how = "skipped";
  else if (behind && (!ahead || odd_end > keeper_end))
    p->how = "extra";
}

std::optional<FrParting> PartingOf(const FrRun& run, const FrGroup& g) {
  if (g.p2p() || g.ranks.size() < 2) return std::nullopt;
  const auto shared = SharedByAll(g);
  if (shared.empty()) return std::nullopt;
  // The run of differing call sites that reaches the last seq every member recorded.
  std::optional<int64_t> start;
  for (auto it = shared.rbegin(); it != shared.rend(); ++it) {
    if (!SitesKnown(run, it->second) || SameSite(it->second)) break;
    start = it->first;
  }
  if (!start || !SameSignature(shared.at(*start))) return std::nullopt;  // fr_mismatch's
  bool later_signature_differs = false;
  for (auto it = shared.find(*start); it != shared.end(); ++it)
    later_signature_differs = later_signature_differs || !SameSignature(it->second);
  if (!EndsUneven(g) && !later_signature_differs) return std::nullopt;
  FrParting p;
  p.group = &g;
  p.seq = *start;
  p.at = shared.at(*start);
  Judge(shared, *start, &p);
  return p;
}

std::string Ranks(const std::vector<int>& ranks) {
  return "rank" + std::string(ranks.size() > 1 ? "s " : " ") + FormatRankRanges(ranks);
}

std::string Summary(const FrRun& run, const FrParting& p) {
  const FrEntry* odd = p.at.at(p.odd.front());
  std::vector<int> others;
  const FrEntry* other = nullptr;
  for (const auto& [rank, e] : p.at)
    if (!std::binary_search(p.odd.begin(), p.odd.end(), rank)) {
      others.push_back(rank);
      other = e;
    }
  const std::string op = run.Str(odd->op);
  const std::string at = " (" + p.group->Label() + " seq " + std::to_string(p.seq) + ")";
  if (other == nullptr)
    return "the ranks' collective streams parted at " + p.group->Label() + " seq " +
           std::to_string(p.seq) + ": each rank issued its " + op +
           " from another line, and neither a majority nor the group's history says which "
           "is right";
  std::string s = Ranks(p.odd) + " issued the " + op + " at " + run.Str(odd->site) + at +
                  " where " + Ranks(others) + " issued the one at " + run.Str(other->site);
  const std::string they = p.odd.size() > 1 ? "their" : "its";
  if (p.how == "skipped")
    s += ": " + Ranks(p.odd) + " skipped that " + run.Str(other->op) + ", and from there " + they +
         " collectives paired with the others' wrong ones";
  else if (p.how == "extra")
    s += ": " + Ranks(p.odd) + " issued one " + op + " more, and from there " + they +
         " collectives paired with the others' wrong ones";
  else
    s += ": from there " + they + " collectives paired with the others' wrong ones";
  return s + " (same op, sizes and dtypes: nothing failed where they parted)";
}

JsonValue RankRow(const FrRun& run, int rank, const FrEntry& e) {
  JsonValue row = JsonValue::Object();
  row.Set("rank", rank);
  if (const FrRankDump* d = run.DumpOf(rank)) row.Set("file", d->file_name);
  row.Set("op", run.Str(e.op));
  row.Set("site", run.Str(e.site));
  row.Set("python_where", run.Str(e.where));
  return row;
}

}  // namespace

std::vector<FrParting> FindPartings(const FrRun& run, const std::vector<FrGroup>& groups) {
  std::vector<FrParting> partings;
  for (const FrGroup& g : groups)
    if (std::optional<FrParting> p = PartingOf(run, g)) partings.push_back(std::move(*p));
  return partings;
}

Finding PartingFinding(const FrRun& run, const FrParting& p) {
  Finding f;
  f.kind = std::string(kind::kCollectiveMismatch);
  f.severity = Severity::kError;
  f.ranks = p.odd;
  f.subject = p.group->Label() + " seq " + std::to_string(p.seq);
  f.summary = Summary(run, p);
  JsonValue ev = JsonValue::Object();
  ev.Set("source", "torch-flight-recorder");
  ev.Set("group", p.group->name());
  ev.Set("group_desc", p.group->desc());
  ev.Set("seq", p.seq);
  ev.Set("basis", p.basis);
  ev.Set("parted", p.how);
  JsonValue rows = JsonValue::Array();
  for (const auto& [rank, e] : p.at) rows.Push(RankRow(run, rank, *e));
  ev.Set("ranks", std::move(rows));
  f.evidence = std::move(ev);
  f.hint =
      "make every rank issue the same collectives in the same order: the odd rank's branch "
      "(a condition on the rank, its data or a counter) skipped or added one; a collective "
      "of the same size as its neighbour pairs with the wrong one without an error";
  return f;
}

}  // namespace dsdiag::analyzers::torch_fr
