// collective-mismatch, at group creation: ranks that created their process groups in another
// order, so that one group name stands for other ranks on different ranks.
//
// Input: the `group` records (trace v5), one per group and member rank:
//   {"type":"group","step":0,"pg":3,"name":"3","desc":"mesh_dp","ranks":[0,2],"group_rank":0}
// torch names a group by a counter every rank advances at every new_group (members or not),
// and its members meet under that name (the store prefix of the backend's rendezvous). A
// rank that creates its groups in another order (a tensor-parallel loop before the
// data-parallel one on one rank: Megatron's hand-written groups) gives a name to other ranks
// than its peers do: under name "1" rank 0 meets rank 2, which it takes for its
// tensor-parallel peer and rank 2 for its data-parallel one. The job then hangs in DDP's
// constructor or a first collective, or computes with the wrong peers.
//
// Evidence: a name two of its members record with different ranks. Who is named: the ranks
// outvoted on the most names (a claim more ranks hold wins); where no claim outvotes another
// (one rank against one), the ranks in the most such disagreements (the rank whose order
// differs disagrees with a peer in every group it mis-numbered, each peer only in one);
// where every claimant is in as many, all of them, with no majority. Error, one finding for the
// run; the hangs and deaths that follow are its follow-ons (passes/mismatch_follow_on_pass.cc,
// evidence `wiring`).
#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "analyzers/framework/analyzer_factories.h"
#include "analyzers/framework/finding_kinds.h"
#include "trace/record_types.h"
#include "trace/records/group_record.h"

namespace dsdiag::analyzers {

namespace records = trace::records;
namespace {

using trace::JsonValue;

constexpr size_t kMaxGroupsDescribed = 3;

// What the members of one name say it is.
struct Name {
  int64_t pg = 0;
  std::string desc;
  std::map<std::vector<int>, std::vector<int>> claims;  // its ranks -> the ranks saying so
};

class GroupWiringAnalyzer : public Analyzer {
 public:
  std::string_view name() const override { return "group-wiring"; }
  std::vector<std::string_view> record_types() const override { return {trace::rec::kGroup}; }

  void OnRecord(const RankInfo& rank, const trace::Record& r) override {
    const auto group = records::GroupIdentity::Read(r);
    if (!group) return;
    // A rank's first record of a name is its claim: a job that destroys its groups and
    // makes new ones (torch's counter starts again) names other groups so later.
    if (!claimed_.insert({group->name, rank.rank}).second) return;
    Name& name = names_[group->name];
    name.pg = group->pg;
    if (name.desc.empty()) name.desc = group->desc;
    name.claims[group->ranks].push_back(rank.rank);
  }

  void Finish(const RunContext&, std::vector<Finding>* findings) override {
    std::vector<std::pair<std::string, const Name*>> wired_apart;
    std::map<int, int> disagreements;  // rank -> names it disagrees on with a peer
    std::map<int, int> outvoted;       // rank -> names on which more ranks hold another claim
    for (const auto& [text, name] : names_) {
      if (name.claims.size() < 2) continue;
      wired_apart.emplace_back(text, &name);
      size_t most = 0, holders = 0;
      for (const auto& [ranks, claimants] : name.claims) {
        holders = claimants.size() > most ? 1 : holders + (claimants.size() == most);
        most = std::max(most, claimants.size());
      }
      for (const auto& [ranks, claimants] : name.claims)
        for (int r : claimants) {
          ++disagreements[r];
          if (holders == 1 && claimants.size() < most) ++outvoted[r];
        }
    }
    if (wired_apart.empty()) return;
    // A claim more ranks hold outvotes the others'; where none does (one rank against one),
    // the rank in the most disagreements is the odd one.
    findings->push_back(MakeFinding(
        wired_apart, Named(outvoted.empty() ? disagreements : outvoted, disagreements.size())));
  }

 private:
  // The ranks counted most often, and whether they are fewer than all `claimants`.
  static std::pair<std::vector<int>, bool> Named(const std::map<int, int>& counts,
                                                 size_t claimants) {
    int most = 0;
    for (const auto& [rank, n] : counts) most = std::max(most, n);
    std::vector<int> named;
    for (const auto& [rank, n] : counts)
      if (n == most) named.push_back(rank);
    return {named, named.size() < claimants};
  }

  // "group 1 is ranks 0,1 on rank 0 but ranks 0,2 on rank 2".
  static std::string Describe(const std::string& text, const Name& name,
                              const std::vector<int>& named) {
    std::string out = "group " + text;
    if (!name.desc.empty()) out += " (" + name.desc + ")";
    std::string theirs, ours;
    for (const auto& [ranks, claimants] : name.claims) {
      const bool culprit = std::any_of(claimants.begin(), claimants.end(), [&](int r) {
        return std::count(named.begin(), named.end(), r) > 0;
      });
      std::string& side = culprit && ours.empty() ? ours : theirs;
      if (!side.empty()) side += " and ";
      side += "ranks " + FormatRankRanges(ranks) + " on " +
              (claimants.size() == 1 ? "rank " : "ranks ") + FormatRankRanges(claimants);
    }
    return out + " is " + (ours.empty() ? theirs : ours + " but " + theirs);
  }

  Finding MakeFinding(const std::vector<std::pair<std::string, const Name*>>& wired_apart,
                      const std::pair<std::vector<int>, bool>& verdict) const {
    const auto& [named, majority] = verdict;
    Finding f;
    f.kind = std::string(kind::kCollectiveMismatch);
    f.severity = Severity::kError;
    f.ranks = named;
    f.step = 0;
    f.subject = "process groups";
    const std::string who = (named.size() == 1 ? "rank " : "ranks ") + FormatRankRanges(named);
    std::string detail;
    for (size_t i = 0; i < wired_apart.size() && i < kMaxGroupsDescribed; ++i)
      detail += (i ? "; " : "") + Describe(wired_apart[i].first, *wired_apart[i].second, named);
    if (wired_apart.size() > kMaxGroupsDescribed)
      detail += " (+" + std::to_string(wired_apart.size() - kMaxGroupsDescribed) + " more)";
    f.summary = majority ? who + " created " + (named.size() == 1 ? "its" : "their") +
                               " process groups in another order than the other ranks, so its "
                               "groups meet other peers than theirs: " +
                               detail
                         : "the ranks created their process groups in different orders, with no "
                           "majority (" +
                               who + "): " + detail;
    JsonValue groups = JsonValue::Array();
    for (const auto& [text, name] : wired_apart) {
      JsonValue g = JsonValue::Object();
      g.Set("pg", name->pg);
      g.Set("name", text);
      if (!name->desc.empty()) g.Set("desc", name->desc);
      JsonValue claims = JsonValue::Array();
      for (const auto& [ranks, claimants] : name->claims) {
        JsonValue c = JsonValue::Object();
        JsonValue members = JsonValue::Array(), by = JsonValue::Array();
        for (int r : ranks) members.Push(static_cast<int64_t>(r));
        for (int r : claimants) by.Push(static_cast<int64_t>(r));
        c.Set("group_ranks", std::move(members));
        c.Set("on_ranks", std::move(by));
        claims.Push(std::move(c));
      }
      g.Set("claims", std::move(claims));
      groups.Push(std::move(g));
    }
    f.evidence.Set("pg", wired_apart.front().second->pg);
    f.evidence.Set("wiring", true);
    f.evidence.Set("basis", majority ? "group creation order" : "no majority");
    f.evidence.Set("majority", majority);
    f.evidence.Set("groups", std::move(groups));
    f.hint =
        "torch names process groups by a counter that every rank advances at every "
        "new_group call, member or not, and a group's members meet under that name: every "
        "rank must create every group, in the same order (one loop over the data-parallel "
        "groups, then one over the tensor-parallel ones, run identically on all ranks; or "
        "init_device_mesh, which does so). The hangs and failures that follow are "
        "consequences.";
    return f;
  }

  std::map<std::string, Name> names_;              // torch's group name -> what its members say
  std::set<std::pair<std::string, int>> claimed_;  // (name, rank) already read
};

}  // namespace

std::unique_ptr<Analyzer> CreateGroupWiringAnalyzer() {
  return std::make_unique<GroupWiringAnalyzer>();
}

}  // namespace dsdiag::analyzers
