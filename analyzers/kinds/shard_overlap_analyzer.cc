// shard-overlap: within an epoch, the ranks' shards intersect or jointly miss samples.
//
// Input: each rank's `sampler` record at the start of an epoch, with the exact membership
// of its shard: `size` (the dataset size N) and `bits` (base64 of ceil(N/8) bytes, bit i set
// when sample i is in the rank's epoch), or the `idx` list (--probes full):
//   {"type":"sampler","step":16,"epoch":1,"sampler_epoch":1,"seed":1234,"n":32,
//    "order":"..","set":"..","size":64,"bits":"q1VV..."}
// Per epoch, once every rank has delivered its record, each sample's holder count is taken:
//  - overlap: sum over samples of (holders - 1). DistributedSampler pads the permutation by
//    wrapping to W * n samples (n per rank), so up to padding = W * n - N duplicates are
//    normal and not reported; more than that is an error (ranks train on the same data,
//    the effective dataset shrinks). The ranks named are those whose sampler settings
//    (`seed`, `sampler_epoch`) differ from the majority, or else every rank holding a
//    shared sample.
//  - missed: samples no rank holds. A correct sampler never misses one: warning (part of
//    the dataset is never trained on in that epoch). Only epochs described by every rank
//    of the world are checked for misses.
// Records without `bits`/`idx` fall back to the order-insensitive `set` hash: two ranks
// with the same hash hold the same shard, an overlap of n per pair. One finding per
// problem (overlap, missed) over the run, at the first epoch where it holds.
//
// A dataset no sampler split: where no rank wrote a `sampler` record (the training loader
// has no DistributedSampler), the ranks' `loader` records' `batch` fingerprints are
// compared step by step (common/identical_batches.h): ranks training on the same batches
// at half the steps or more hold the whole dataset each, in the same order — the overlap
// is total. One error, subject "data loader", at the first identical step, naming those
// ranks.
#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analyzers/framework/analyzer_factories.h"
#include "analyzers/framework/finding_kinds.h"
#include "analyzers/kinds/common/data_replicas.h"
#include "analyzers/kinds/common/identical_batches.h"
#include "analyzers/kinds/common/rank_groups.h"
#include "analyzers/kinds/common/split_verdict.h"
#include "trace/record_types.h"
#include "trace/records/loader_record.h"
#include "trace/records/sampler_record.h"
#include "trace/sample_bitmap.h"

namespace dsdiag::analyzers {

namespace records = trace::records;
namespace {

using trace::JsonValue;

struct Shard {
  int rank = 0;
  int64_t step = 0;
  int64_t n = 0;
  int64_t seed = 0;
  int64_t sampler_epoch = 0;
  uint64_t set = 0;
  int64_t size = 0;               // N, 0 when unknown
  std::vector<uint64_t> members;  // distinct indices, when exact membership was recorded
  bool exact = false;
};

std::optional<Shard> ReadShard(int rank, const trace::Record& r) {
  const records::SamplerView sampler(r);
  Shard s;
  s.rank = rank;
  s.step = r.step();
  s.n = sampler.n().value_or(0);
  s.seed = sampler.seed().value_or(0);
  s.sampler_epoch = sampler.sampler_epoch().value_or(0);
  s.set = sampler.set().value_or(0);
  s.size = sampler.size().value_or(0);
  if (auto bits = sampler.bits(); bits && s.size > 0) {
    auto members = trace::DecodeSampleBitmap(*bits, s.size);
    if (!members) return s;  // unusable
    s.members = std::move(*members);
    s.exact = true;
  } else if (std::vector<int64_t> idx; sampler.indices(&idx) && !idx.empty()) {
    for (int64_t i : idx) s.members.push_back(static_cast<uint64_t>(i));
    std::sort(s.members.begin(), s.members.end());
    s.members.erase(std::unique(s.members.begin(), s.members.end()), s.members.end());
    s.exact = true;
  }
  return s;
}

struct Problem {
  int64_t first_epoch = -1;
  int64_t first_step = 0;
  std::vector<int> ranks;
  JsonValue per_epoch = JsonValue::Array();
  int64_t epochs = 0;
  JsonValue first_detail = JsonValue::Object();
};

class ShardOverlapAnalyzer : public Analyzer {
  DataReplicas replicas_;

 public:
  std::string_view name() const override { return kind::kShardOverlap; }
  std::vector<std::string_view> record_types() const override {
    return {trace::rec::kSampler, trace::rec::kLoader, trace::rec::kParams, trace::rec::kGroup,
            trace::rec::kMesh};
  }

  void Begin(const RunContext& run) override {
    ranks_expected_ = run.ranks.size();
    batches_.emplace(ranks_expected_);
    batches_->SetReplicaOf([this](int rank) { return replicas_.ReplicaOf(rank); });
    world_size_ = run.world_size;
    for (const RankInfo& r : run.ranks)
      if (const JsonValue* v = r.header.config.Find("dataset_size")) header_size_ = v->as_int();
    // The seed every rank was configured with (config.seed, when all headers agree): the
    // sampler's seed by default, so a rank whose sampler seed is another one is the odd one.
    for (const RankInfo& r : run.ranks) {
      const JsonValue* v = r.header.config.Find("seed");
      const std::optional<int64_t> seed = v && v->kind() == JsonValue::Kind::kInt
                                              ? std::optional<int64_t>(v->as_int())
                                              : std::nullopt;
      if (&r == &run.ranks.front()) configured_seed_ = seed;
      if (seed != configured_seed_) configured_seed_.reset();
    }
  }

  void OnRecord(const RankInfo& rank, const trace::Record& r) override {
    replicas_.Note(rank.rank, r);
    if (r.type_id() == trace::rec_id::kLoader) {
      if (auto batch = records::LoaderView(r).batch(); batch && *batch != 0 && batches_)
        batches_->Add(rank.rank, r.step(), *batch);
      return;
    }
    if (r.type_id() != trace::rec_id::kSampler) return;
    sampler_seen_ = true;
    const auto epoch = records::SamplerView(r).epoch();
    if (!epoch) return;
    auto& shards = pending_[*epoch];
    if (shards.count(rank.rank)) return;  // a resume re-describes the epoch: keep the first
    if (auto s = ReadShard(rank.rank, r)) shards.emplace(rank.rank, std::move(*s));
  }

  void OnStepDone(int64_t step) override {
    if (batches_) batches_->StepDone(step);
    for (auto it = pending_.begin(); it != pending_.end();) {
      if (it->second.size() < ranks_expected_) {
        ++it;
        continue;
      }
      Check(it->first, it->second);
      it = pending_.erase(it);
    }
  }

  void Finish(const RunContext&, std::vector<Finding>* findings) override {
    for (auto& [epoch, shards] : pending_) Check(epoch, shards);
    pending_.clear();
    if (overlap_.first_epoch >= 0) findings->push_back(Report(overlap_, true));
    if (missed_.first_epoch >= 0) findings->push_back(Report(missed_, false));
    if (!batches_ || sampler_seen_) return;  // a sampler's shards are compared exactly above
    if (auto v = batches_->Finish()) findings->push_back(ReportUnsplit(std::move(*v)));
  }

 private:
  void Check(int64_t epoch, const std::map<int, Shard>& shards) {
    // One shard per data replica; a peer holding another shard than its replica's lowest
    // rank (input-divergence names it) counts on its own.
    std::vector<const Shard*> all;
    for (const auto& [rank, s] : shards) {
      auto first = shards.find(replicas_.ReplicaOf(rank));
      if (first == shards.end() || first->first == rank || first->second.set != s.set ||
          first->second.members != s.members)
        all.push_back(&s);
    }
    if (all.size() < 2) return;
    const bool exact = std::all_of(all.begin(), all.end(), [](const Shard* s) { return s->exact; });
    if (exact)
      CheckExact(epoch, all);
    else
      CheckHashes(epoch, all);
  }

  // Ranks whose sampler settings (seed, epoch) differ from the others': the likely culprits.
  // The settings of the largest group are the reference; a tie is broken only by evidence,
  // the seed the run was configured with; otherwise every rank of the split is named.
  // *basis says which rule named them: "majority", "configured seed", "no majority", or
  // "shared shard" when every rank has the same settings (the ranks holding shared samples
  // are then named by the caller).
  std::vector<int> OddSettings(const std::vector<const Shard*>& shards, std::string* basis) const {
    std::vector<std::pair<int, std::pair<int64_t, int64_t>>> values;
    for (const Shard* s : shards) values.push_back({s->rank, {s->seed, s->sampler_epoch}});
    const auto groups = GroupRanks(values);
    const SplitVerdict split = JudgeSplit(groups);
    *basis = groups.size() <= 1 ? "shared shard" : split.majority ? "majority" : "no majority";
    if (split.majority || !configured_seed_) return split.named;
    std::vector<int> odd;
    int configured = 0;
    for (const auto& g : groups) {
      if (g.value.first == *configured_seed_) {
        ++configured;
      } else {
        odd.insert(odd.end(), g.ranks.begin(), g.ranks.end());
      }
    }
    if (configured != 1) return split.named;
    *basis = "configured seed";
    std::sort(odd.begin(), odd.end());
    return odd;
  }

  // The world's data replicas: its ranks, a set that must train on the same batches once.
  int64_t DataReplicaCount() {
    int64_t count = 0;
    for (int r = 0; r < world_size_; ++r) count += replicas_.ReplicaOf(r) == r;
    return count;
  }

  void CheckExact(int64_t epoch, const std::vector<const Shard*>& shards) {
    int64_t size = 0, n = 0, step = shards.front()->step;
    for (const Shard* s : shards) {
      size = std::max(size, s->size);
      n = std::max(n, s->n);
      step = std::min(step, s->step);
    }
    if (size <= 0) size = header_size_;
    std::map<uint64_t, int> holders;
    std::vector<int> count(static_cast<size_t>(std::max<int64_t>(size, 0)), 0);
    for (const Shard* s : shards)
      for (uint64_t i : s->members) {
        if (i < count.size())
          ++count[i];
        else
          ++holders[i];  // outside the known size: still counts for overlap
      }
    int64_t duplicates = 0, missed = 0;
    for (int c : count) {
      if (c > 1) duplicates += c - 1;
      if (c == 0) ++missed;
    }
    for (const auto& [i, c] : holders) duplicates += c > 1 ? c - 1 : 0;
    const int64_t world = static_cast<int64_t>(shards.size());
    const int64_t padding = size > 0 ? std::max<int64_t>(world * n - size, 0) : 0;
    std::string basis;
    std::vector<int> odd = OddSettings(shards, &basis);
    if (duplicates > padding) {
      std::vector<int> ranks = odd;
      JsonValue shared = JsonValue::Object();
      for (const Shard* s : shards) {
        int64_t k = 0;
        for (uint64_t i : s->members)
          if (i < count.size() && count[i] > 1) ++k;
        shared.Set(std::to_string(s->rank), k);
        if (odd.empty() && k > 0) ranks.push_back(s->rank);
      }
      JsonValue detail = Detail(epoch, shards, size, n, padding);
      detail.Set("overlap", duplicates);
      detail.Set("shared_per_rank", std::move(shared));
      detail.Set("basis", basis);
      Add(&overlap_, epoch, step, ranks, std::move(detail), duplicates);
    }
    // A rank without a record (dead, trace missing) leaves samples unaccounted for, not missed.
    const bool complete = world > 0 && world >= DataReplicaCount();
    if (complete && size > 0 && missed > 0) {
      JsonValue detail = Detail(epoch, shards, size, n, padding);
      detail.Set("missed", missed);
      detail.Set("basis", basis);
      std::vector<int> ranks = odd;
      if (ranks.empty())
        for (const Shard* s : shards) ranks.push_back(s->rank);
      Add(&missed_, epoch, step, ranks, std::move(detail), missed);
    }
  }

  void CheckHashes(int64_t epoch, const std::vector<const Shard*>& shards) {
    std::vector<std::pair<int, uint64_t>> values;
    int64_t n = 0, step = shards.front()->step;
    for (const Shard* s : shards) {
      values.push_back({s->rank, s->set});
      n = std::max(n, s->n);
      step = std::min(step, s->step);
    }
    if (n <= 0) return;
    std::vector<int> ranks;
    int64_t duplicates = 0;
    for (const auto& g : GroupRanks(values))
      if (g.ranks.size() > 1) {
        ranks.insert(ranks.end(), g.ranks.begin(), g.ranks.end());
        duplicates += static_cast<int64_t>(g.ranks.size() - 1) * n;
      }
    if (ranks.empty()) return;
    std::string basis;
    std::vector<int> odd = OddSettings(shards, &basis);
    JsonValue detail = Detail(epoch, shards, header_size_, n, 0);
    detail.Set("basis", basis);
    detail.Set("overlap", duplicates);
    detail.Set("identical_shards", true);
    Add(&overlap_, epoch, step, odd.empty() ? ranks : odd, std::move(detail), duplicates);
  }

  static JsonValue Detail(int64_t epoch, const std::vector<const Shard*>& shards, int64_t size,
                          int64_t n, int64_t padding) {
    JsonValue d = JsonValue::Object();
    d.Set("epoch", epoch);
    d.Set("dataset_size", size);
    d.Set("per_rank", n);
    d.Set("padding", padding);
    JsonValue seeds = JsonValue::Object(), epochs = JsonValue::Object();
    for (const Shard* s : shards) {
      seeds.Set(std::to_string(s->rank), s->seed);
      epochs.Set(std::to_string(s->rank), s->sampler_epoch);
    }
    d.Set("seeds", std::move(seeds));
    d.Set("sampler_epochs", std::move(epochs));
    return d;
  }

  static void Add(Problem* p, int64_t epoch, int64_t step, const std::vector<int>& ranks,
                  JsonValue detail, int64_t count) {
    if (p->first_epoch < 0) {
      p->first_epoch = epoch;
      p->first_step = step;
      p->first_detail = std::move(detail);
    }
    ++p->epochs;
    p->ranks.insert(p->ranks.end(), ranks.begin(), ranks.end());
    JsonValue e = JsonValue::Object();
    e.Set("epoch", epoch);
    e.Set("count", count);
    p->per_epoch.Push(std::move(e));
  }

  static Finding Report(Problem& p, bool overlap) {
    Finding f;
    f.kind = std::string(kind::kShardOverlap);
    f.severity = overlap ? Severity::kError : Severity::kWarning;
    NormalizeRanks(&p.ranks);
    f.ranks = p.ranks;
    f.step = p.first_step;
    f.subject = "sampler";
    const JsonValue* count = p.first_detail.Find(overlap ? "overlap" : "missed");
    const std::string k = std::to_string(count ? count->as_int() : 0);
    const std::string where =
        " in epoch " + std::to_string(p.first_epoch) +
        (p.epochs > 1 ? " (and " + std::to_string(p.epochs - 1) + " more)" : "");
    std::string who = (f.ranks.size() == 1 ? "rank " : "ranks ") + FormatRankRanges(f.ranks);
    const JsonValue* basis = p.first_detail.Find("basis");
    if (basis && basis->as_string() == "no majority") {
      who +=
          " (no majority: the ranks' sampler settings split evenly, and no configured seed "
          "says which is right)";
    }
    if (overlap) {
      const JsonValue* pad = p.first_detail.Find("padding");
      f.summary = "The ranks' data shards overlap by " + k + " samples" + where +
                  " (padding allows " + std::to_string(pad ? pad->as_int() : 0) + "); suspect " +
                  who;
    } else {
      f.summary = k + " samples are on no rank's shard" + where + "; suspect " + who;
    }
    for (const auto& [key, value] : p.first_detail.members()) f.evidence.Set(key, value);
    f.evidence.Set("epochs_affected", p.epochs);
    f.evidence.Set("per_epoch", p.per_epoch);
    f.hint =
        "Every rank must build its DistributedSampler with the same seed (and shuffle=True on "
        "all or none) and call sampler.set_epoch(epoch) on every rank; a per-rank seed "
        "(seed + rank) makes the shards overlap and miss samples, so the ranks train on "
        "partly the same data.";
    return f;
  }

  static Finding ReportUnsplit(IdenticalBatchesVerdict v) {
    Finding f;
    f.kind = std::string(kind::kShardOverlap);
    f.severity = Severity::kError;
    f.ranks = v.ranks;
    f.step = v.first_step;
    f.subject = std::string(kUnsplitSubject);
    f.summary = "ranks " + FormatRankRanges(f.ranks) + " trained on identical batches at " +
                std::to_string(v.shared_steps) + " of " + std::to_string(v.compared_steps) +
                " steps: the dataset is not split between the ranks (the training DataLoader "
                "has no DistributedSampler), every rank trains on all of it in the same order";
    f.evidence = std::move(v.evidence);
    f.evidence.Set("basis", std::string(kIdenticalBatchesBasis));
    f.evidence.Set("distributed_sampler", false);
    f.hint =
        "Give the training DataLoader a DistributedSampler(dataset, shuffle=True) instead of "
        "shuffle=True, and call sampler.set_epoch(epoch) every epoch (Lightning and Accelerate "
        "add one to the loaders they prepare; an IterableDataset must split its stream by "
        "rank). With one seed on every rank, shuffle=True draws the same order on each: the "
        "ranks average the gradient of one batch, and an epoch is W times longer than needed.";
    return f;
  }

  static constexpr std::string_view kUnsplitSubject = "data loader";

  std::optional<IdenticalBatches> batches_;
  bool sampler_seen_ = false;
  size_t ranks_expected_ = 0;
  int world_size_ = 0;
  int64_t header_size_ = 0;
  std::optional<int64_t> configured_seed_;
  std::map<int64_t, std::map<int, Shard>> pending_;  // epoch -> rank -> shard
  Problem overlap_, missed_;
};

}  // namespace

std::unique_ptr<Analyzer> CreateShardOverlapAnalyzer() {
  return std::make_unique<ShardOverlapAnalyzer>();
}

}  // namespace dsdiag::analyzers
