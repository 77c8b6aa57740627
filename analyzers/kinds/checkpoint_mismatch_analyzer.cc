// checkpoint-mismatch: the ranks of a resumed run did not resume from the same state.
//
// Input: `ckpt` load records and the parameter fingerprints taken right after the load:
//   {"type":"ckpt","op":"load","path":"run/checkpoints/step-00000006.pt","h":"c402..",
//    "ckpt_step":6,"epoch":0,...}
//   {"type":"fp","what":"param","why":"resume","gran":"bucket","h":[...]}
// Every replica must restart from the same parameters, optimizer and scaler state, at the
// same step and epoch. A rank that read a stale or another job's file (a stale directory
// listing, a `latest` symlink updated mid-way, a per-node path) silently trains a different
// model. The n-th load of each rank is compared across ranks by content digest `h`,
// `ckpt_step` and `epoch`; then the resume fingerprints. Either mismatch is one error; its
// subject is the checkpoint the named ranks loaded (or, when only the fingerprints differ,
// the one every rank loaded), its step the step training resumed at.
// Who is named, evidence first: ranks that loaded an older checkpoint (a lower ckpt_step)
// than others did are the stale ones, at any world size — resuming means the latest state;
// otherwise the split verdict (split_verdict.h): the ranks outside the largest group, or
// every rank of the split when there is no majority.
// A run that loads on rank 0 only and broadcasts is compared by its fingerprints alone. When
// every rank loaded a path of its own (per-rank shards), the digests are not compared, only
// `ckpt_step` and `epoch` (and the fingerprints).
// A load into the DDP model on some ranks only, after the wrap (common/one_sided_load.h):
// the ranks that loaded are named, at the load's step (before the first optimizer step for
// a load before the loop), basis "loaded on these ranks only"; the replica-divergence it
// causes later is its follow-on (passes/divergence_follow_on_pass.cc).
#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "analyzers/framework/analyzer_factories.h"
#include "analyzers/framework/finding_kinds.h"
#include "analyzers/kinds/common/fingerprints.h"
#include "analyzers/kinds/common/one_sided_load.h"
#include "analyzers/kinds/common/rank_groups.h"
#include "analyzers/kinds/common/split_verdict.h"
#include "trace/record_types.h"
#include "trace/records/ckpt_record.h"
#include "trace/records/fp_record.h"

namespace dsdiag::analyzers {

namespace records = trace::records;
namespace {

using trace::JsonValue;

const std::optional<std::string_view> kLoad = records::kCkptLoad;

struct Load {
  std::string path;
  uint64_t hash = 0;
  int64_t ckpt_step = 0;
  int64_t epoch = 0;
  int64_t step = 0;  // the record's step
  // What must agree across ranks (the path may legitimately differ: per-node copies).
  bool operator==(const Load& o) const {
    return hash == o.hash && ckpt_step == o.ckpt_step && epoch == o.epoch;
  }
};

JsonValue IntArray(const std::vector<int>& v) {
  JsonValue a = JsonValue::Array();
  for (int x : v) a.Push(x);
  return a;
}

std::string Hex(uint64_t h) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

class CheckpointMismatchAnalyzer : public Analyzer {
 public:
  std::string_view name() const override { return kind::kCheckpointMismatch; }
  std::vector<std::string_view> record_types() const override {
    return {trace::rec::kCheckpoint, trace::rec::kFingerprint};
  }

  void OnRecord(const RankInfo& rank, const trace::Record& r) override {
    if (r.type_id() == trace::rec_id::kCheckpoint) {
      const records::CkptView ckpt(r);
      if (ckpt.op() != kLoad) return;
      Load l;
      l.path = std::string(ckpt.path().value_or(""));
      l.hash = ckpt.hash().value_or(0);
      l.ckpt_step = ckpt.ckpt_step().value_or(0);
      l.epoch = ckpt.epoch().value_or(0);
      l.step = r.step();
      loads_[rank.rank].push_back(std::move(l));
      return;
    }
    const records::FpView view(r);
    if (r.type_id() != trace::rec_id::kFingerprint || view.what() != records::fp_what::kParam)
      return;
    auto fp = ReadFingerprint(r);
    if (!fp) return;
    one_sided_.Add(rank.rank, r.step(), *fp);
    if (view.why() != records::fp_why::kResume) return;
    auto& list = resume_fps_[rank.rank];
    list.push_back({r.step(), std::move(*fp)});
  }

  void Finish(const RunContext&, std::vector<Finding>* findings) override {
    size_t n = 0;
    for (const auto& [rank, list] : loads_) n = std::max(n, list.size());
    for (const auto& [rank, list] : resume_fps_) n = std::max(n, list.size());
    for (size_t i = 0; i < n; ++i) {
      if (auto f = CompareNth(i)) {
        findings->push_back(std::move(*f));
        return;  // the first mismatch explains what follows
      }
    }
    if (auto v = one_sided_.Judge()) findings->push_back(OneSidedFinding(*v));
  }

 private:
  // Who loaded what: the stale ranks (an older checkpoint than others), else the vote.
  struct LoadVerdict {
    std::vector<int> named;
    size_t reference = 0;  // the group the named ranks are compared with
    size_t odd = 1;        // the group shown as theirs
    std::string basis;
    bool majority = true;
  };
  static LoadVerdict JudgeLoads(const std::vector<RankGroup<Load>>& groups) {
    LoadVerdict v;
    int64_t latest = groups[0].value.ckpt_step;
    for (size_t g = 0; g < groups.size(); ++g)
      if (groups[g].value.ckpt_step > latest) latest = groups[g].value.ckpt_step, v.reference = g;
    for (size_t g = 0; g < groups.size(); ++g)
      if (groups[g].value.ckpt_step < latest)
        v.named.insert(v.named.end(), groups[g].ranks.begin(), groups[g].ranks.end());
    if (!v.named.empty()) {
      std::sort(v.named.begin(), v.named.end());
      v.odd = v.reference == 0 ? 1 : 0;
      for (size_t g = 0; g < groups.size(); ++g)
        if (groups[g].value.ckpt_step < latest) {
          v.odd = g;
          break;
        }
      v.basis = "older checkpoint";
      return v;
    }
    const SplitVerdict split = JudgeSplit(groups);
    v.named = split.named;
    v.basis = split.majority ? "majority" : "no majority";
    v.majority = split.majority;
    return v;
  }

  static bool EachRankItsOwnPath(const std::vector<std::pair<int, Load>>& loads) {
    std::set<std::string> paths;
    for (const auto& [rank, load] : loads) paths.insert(load.path);
    return loads.size() > 1 && paths.size() == loads.size();
  }

  std::optional<Finding> CompareNth(size_t i) const {
    std::vector<std::pair<int, Load>> loads;
    for (const auto& [rank, list] : loads_)
      if (i < list.size()) loads.emplace_back(rank, list[i]);
    RankFingerprints fps;
    int64_t fp_step = 0;
    for (const auto& [rank, list] : resume_fps_) {
      if (i >= list.size()) continue;
      fps.Set(rank, list[i].second);
      fp_step = list[i].first;
    }
    // Every rank loading a file of its own (ckpt-rank3.pt: sharded state, FSDP / ZeRO
    // shards) holds different bytes by design: then only the step and epoch must agree
    // (the resume fingerprints still compare what DDP replicas hold).
    const bool sharded = EachRankItsOwnPath(loads);
    if (sharded)
      for (auto& [rank, load] : loads) load.hash = 0;
    const auto load_groups = GroupRanks(loads);
    const bool loads_differ = load_groups.size() > 1;
    const auto fp_groups = fps.size() > 1 ? GroupByVector(fps) : std::vector<RankGroup<uint64_t>>{};
    const bool fps_differ = fp_groups.size() > 1;
    if (!loads_differ && !fps_differ) return std::nullopt;

    Finding f;
    f.kind = std::string(kind::kCheckpointMismatch);
    f.severity = Severity::kError;
    const LoadVerdict verdict = loads_differ ? JudgeLoads(load_groups) : LoadVerdict{};
    const SplitVerdict fp_split = fps_differ ? JudgeSplit(fp_groups) : SplitVerdict{};
    f.ranks = loads_differ ? verdict.named : fp_split.named;
    const std::string who = (f.ranks.size() == 1 ? "rank " : "ranks ") + FormatRankRanges(f.ranks);
    if (loads_differ) {
      const Load& ref = load_groups[verdict.reference].value;
      const Load& odd = load_groups[verdict.odd].value;
      const std::vector<int>& ref_ranks = load_groups[verdict.reference].ranks;
      f.step = std::max(ref.step, ref.ckpt_step);
      f.subject = odd.path;
      f.summary = who + " resumed from " + odd.path + " (step " + std::to_string(odd.ckpt_step) +
                  ", epoch " + std::to_string(odd.epoch) + ") while rank" +
                  (ref_ranks.size() == 1 ? " " : "s ") + FormatRankRanges(ref_ranks) +
                  " resumed from " + ref.path + " (step " + std::to_string(ref.ckpt_step) +
                  ", epoch " + std::to_string(ref.epoch) + ")";
      if (ref.hash != odd.hash && ref.ckpt_step == odd.ckpt_step && ref.epoch == odd.epoch)
        f.summary = who + " loaded different content (h " + Hex(odd.hash) + " vs " + Hex(ref.hash) +
                    ") for the checkpoint of step " + std::to_string(ref.ckpt_step);
      if (verdict.basis == "older checkpoint") f.summary += ": an older checkpoint";
      if (!verdict.majority) f.summary += NoMajorityText(load_groups, JudgeSplit(load_groups));
    } else {
      const Load* any = loads.empty() ? nullptr : &loads.front().second;
      f.step = any ? std::max(any->step, any->ckpt_step) : fp_step;
      if (any) f.subject = any->path;
      f.summary = "after resuming, " + who + " hold parameters that differ from the others'" +
                  (loads.size() > 1 ? " although every rank loaded the same checkpoint" : "") +
                  NoMajorityText(fp_groups, fp_split);
    }
    f.hint =
        "Every rank must resume from the same checkpoint: resolve the path once (on rank 0) and "
        "broadcast it, or load on rank 0 and broadcast the state; check for stale directory "
        "listings or `latest` links on shared filesystems, and make the resume step, epoch and "
        "scaler state come from the same file.";
    JsonValue groups = JsonValue::Array();
    for (const auto& g : load_groups) {
      JsonValue o = JsonValue::Object();
      o.Set("ranks", IntArray(g.ranks));
      o.Set("path", g.value.path);
      o.Set("h", Hex(g.value.hash));
      o.Set("ckpt_step", g.value.ckpt_step);
      o.Set("epoch", g.value.epoch);
      groups.Push(std::move(o));
    }
    f.evidence.Set("loads", std::move(groups));
    f.evidence.Set("basis", loads_differ        ? verdict.basis
                            : fp_split.majority ? "majority"
                                                : "no majority");
    f.evidence.Set("majority", loads_differ ? verdict.majority : fp_split.majority);
    if (!fps.empty()) {
      f.evidence.Set("params_differ_after_load", fps_differ);
      if (fps_differ) f.evidence.Set("param_groups", GroupsJson(fp_groups));
    }
    return f;
  }

  Finding OneSidedFinding(const OneSidedLoadVerdict& v) const {
    Finding f;
    f.kind = std::string(kind::kCheckpointMismatch);
    f.severity = Severity::kError;
    f.ranks = v.loaded;
    f.step = v.step;
    const Load* load = nullptr;  // the first loading rank's last load at or before it
    if (auto it = loads_.find(v.loaded.front()); it != loads_.end())
      for (const Load& l : it->second)
        if (l.step <= v.step) load = &l;
    if (load) f.subject = load->path;
    const std::string who =
        (v.loaded.size() == 1 ? "rank " : "ranks ") + FormatRankRanges(v.loaded);
    const std::string others =
        (v.not_loaded.size() == 1 ? "rank " : "ranks ") + FormatRankRanges(v.not_loaded);
    f.summary = who + " loaded " + (load ? load->path : std::string("a state dict")) +
                " into the DDP model at step " + std::to_string(v.step) +
                " (after the DDP wrap) and " + others +
                " did not: DDP broadcast the parameters "
                "before the load, so the replicas differ from then on (still at step " +
                std::to_string(v.still_differ_at) + ")";
    f.hint =
        "Load before wrapping: every rank loads into the bare model before DDP(model), or rank 0 "
        "does and DDP's constructor broadcasts its parameters; after the wrap, load on every "
        "rank (map_location=\"cpu\" or the rank's device) or broadcast each parameter from the "
        "loading rank (dist.broadcast(p.data, 0)).";
    f.evidence.Set("basis", "loaded on these ranks only");
    f.evidence.Set("loaded", IntArray(v.loaded));
    f.evidence.Set("not_loaded", IntArray(v.not_loaded));
    f.evidence.Set("still_differ_at", v.still_differ_at);
    return f;
  }

  OneSidedLoad one_sided_;
  std::map<int, std::vector<Load>> loads_;  // rank -> its loads, in order
  std::map<int, std::vector<std::pair<int64_t, FingerprintRecord>>> resume_fps_;
};

}  // namespace

std::unique_ptr<Analyzer> CreateCheckpointMismatchAnalyzer() {
  return std::make_unique<CheckpointMismatchAnalyzer>();
}

}  // namespace dsdiag::analyzers
