// rng-collision: per-rank random streams that are identical across ranks.
//
// Input: the `rng` records, one per generator when it is seeded (or re-seeded):
//   {"type":"rng","step":0,"stream":"dropout","why":"init","seed":1234,"h":"<state hash>"}
// Streams fall in two families:
//  - shared by design: the model-init generator (`cpu`, `cuda`, `cuda:<i>`), identical
//    everywhere so that replicas start equal, and the distributed sampler's shuffle
//    generator (`sampler`), identical so that the ranks' shards partition one permutation;
//  - per rank: everything else (dropout, augmentation, noise). Ranks sharing such a state
//    draw the same masks and augmentations, which quietly shrinks the effective batch.
// For each per-rank stream the n-th record of every rank is compared (same `stream`, `why`
// and occurrence); every group of >= 2 ranks with the same state hash is a collision.
// DataLoader workers' streams (`loader-worker-<torch|numpy|random>`, why
// `loader-<L>/worker-<w>`) must also differ between the workers of one rank: the n-th
// record of each worker of loader L on a rank is compared with its siblings', and workers
// sharing a state (a worker_init_fn seeding NumPy with base_seed + rank: every worker of
// the rank draws the same augmentations, though the ranks differ) are a collision within
// the rank, whatever the other ranks hold.
// Severity: warning — training proceeds, but the replicas regularise in lockstep.
// One finding per stream and scope (across ranks, within a rank), at its first colliding
// occurrence; `subject` is the stream.
#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "analyzers/framework/analyzer_factories.h"
#include "analyzers/framework/finding_kinds.h"
#include "analyzers/kinds/common/rank_groups.h"
#include "trace/record_types.h"
#include "trace/records/rng_record.h"

namespace dsdiag::analyzers {

namespace records = trace::records;
namespace {

using trace::JsonValue;

bool SharedByDesign(const std::string& stream) {
  return stream == "cpu" || stream == "sampler" || stream == "cuda" ||
         stream.rfind("cuda:", 0) == 0;
}

struct Draw {
  int rank = 0;
  uint64_t hash = 0;
  int64_t seed = 0;
  int64_t step = 0;
};

// "loader-3/worker-1" -> ("loader-3", 1); nullopt for any other `why`.
std::optional<std::pair<std::string, int>> LoaderWorker(const std::string& why) {
  const size_t slash = why.find("/worker-");
  if (why.rfind("loader-", 0) != 0 || slash == std::string::npos) return std::nullopt;
  const std::string id = why.substr(slash + 8);
  if (id.empty() || id.size() > 6 || id.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  return std::make_pair(why.substr(0, slash), std::stoi(id));
}

// The workers of one loader on one rank at one occurrence (their n-th pass).
struct WorkerKey {
  std::string stream;
  int rank = 0;
  std::string loader;
  int nth = 0;
  bool operator<(const WorkerKey& o) const {
    return std::tie(stream, rank, loader, nth) < std::tie(o.stream, o.rank, o.loader, o.nth);
  }
};

// A rank whose workers share states: each group of workers (ascending) with its state.
struct WorkerCollision {
  int rank = 0;
  std::string loader;
  int nth = 0;
  int64_t step = 0;
  std::vector<RankGroup<uint64_t>> groups;  // RankGroup's ranks are worker ids here
};

class RngCollisionAnalyzer : public Analyzer {
 public:
  std::string_view name() const override { return kind::kRngCollision; }
  std::vector<std::string_view> record_types() const override { return {trace::rec::kRng}; }

  void OnRecord(const RankInfo& rank, const trace::Record& r) override {
    if (r.type_id() != trace::rec_id::kRng) return;
    const records::RngView rng(r);
    const auto stream = rng.stream();
    const auto hash = rng.state_hash();
    if (!stream || !hash) return;
    std::string stream_name(*stream);
    if (SharedByDesign(stream_name)) return;
    const std::string why(rng.why().value_or(""));
    int& nth = occurrences_[{rank.rank, stream_name, why}];
    draws_[{stream_name, why, nth}].push_back({rank.rank, *hash, rng.seed().value_or(0), r.step()});
    if (const auto worker = LoaderWorker(why))
      workers_[{stream_name, rank.rank, worker->first, nth}].push_back(
          {worker->second, *hash, rng.seed().value_or(0), r.step()});
    ++nth;
  }

  void Finish(const RunContext&, std::vector<Finding>* findings) override {
    std::map<std::string, bool> reported;  // stream -> a finding exists
    for (auto& [key, draws] : draws_) {
      const auto& [stream, why, nth] = key;
      if (reported[stream] || draws.size() < 2) continue;
      std::sort(draws.begin(), draws.end(),
                [](const Draw& a, const Draw& b) { return a.rank < b.rank; });
      std::vector<std::pair<int, uint64_t>> values;
      for (const Draw& d : draws) values.emplace_back(d.rank, d.hash);
      std::vector<RankGroup<uint64_t>> colliding;
      for (auto& g : GroupRanks(values))
        if (g.ranks.size() >= 2) colliding.push_back(std::move(g));
      if (colliding.empty()) continue;
      reported[stream] = true;
      findings->push_back(MakeFinding(stream, why, nth, draws, colliding));
    }
    FinishWorkers(findings);
  }

 private:
  static Finding MakeFinding(const std::string& stream, const std::string& why, int nth,
                             const std::vector<Draw>& draws,
                             const std::vector<RankGroup<uint64_t>>& colliding) {
    Finding f;
    f.kind = std::string(kind::kRngCollision);
    f.severity = Severity::kWarning;
    f.subject = stream;
    int64_t step = draws.front().step;
    JsonValue groups = JsonValue::Array();
    for (const auto& g : colliding) {
      f.ranks.insert(f.ranks.end(), g.ranks.begin(), g.ranks.end());
      JsonValue group = JsonValue::Object();
      JsonValue ranks = JsonValue::Array();
      for (int r : g.ranks) ranks.Push(r);
      group.Set("ranks", std::move(ranks));
      char hex[17];
      std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(g.value));
      group.Set("h", std::string(hex));
      for (const Draw& d : draws)
        if (d.rank == g.ranks.front()) group.Set("seed", d.seed);
      groups.Push(std::move(group));
    }
    for (const Draw& d : draws)
      if (std::binary_search(f.ranks.begin(), f.ranks.end(), d.rank)) step = std::min(step, d.step);
    NormalizeRanks(&f.ranks);
    f.step = step;
    const bool all = f.ranks.size() == draws.size() && colliding.size() == 1;
    f.summary = "RNG stream \"" + stream + "\" has the same state on " +
                (all ? "every rank (" + FormatRankRanges(f.ranks) + ")"
                     : "ranks " + FormatRankRanges(f.ranks)) +
                (why.empty() ? "" : " at \"" + why + "\"") + ": per-rank randomness is repeated";
    f.evidence.Set("stream", stream);
    f.evidence.Set("why", why);
    f.evidence.Set("occurrence", nth);
    f.evidence.Set("ranks_reporting", static_cast<int64_t>(draws.size()));
    f.evidence.Set("groups", std::move(groups));
    f.hint =
        "Seed per-rank generators (dropout, augmentation, noise) with base_seed + rank (or a "
        "seed derived from the rank), and keep only the model-init and sampler generators "
        "shared; identical streams give every replica the same dropout masks and "
        "augmentations, shrinking the effective batch.";
    return f;
  }

  // Workers of one rank sharing a state: per stream, each rank's first such occurrence.
  void FinishWorkers(std::vector<Finding>* findings) {
    std::map<std::string, std::map<int, WorkerCollision>> by_stream;
    for (auto& [key, draws] : workers_) {
      if (draws.size() < 2 || by_stream[key.stream].count(key.rank)) continue;
      std::sort(draws.begin(), draws.end(),
                [](const Draw& a, const Draw& b) { return a.rank < b.rank; });
      std::vector<std::pair<int, uint64_t>> values;
      for (const Draw& d : draws) values.emplace_back(d.rank, d.hash);  // d.rank: worker id
      WorkerCollision c{key.rank, key.loader, key.nth, draws.front().step, {}};
      for (auto& g : GroupRanks(values))
        if (g.ranks.size() >= 2) c.groups.push_back(std::move(g));
      if (!c.groups.empty()) by_stream[key.stream].emplace(key.rank, std::move(c));
    }
    for (const auto& [stream, ranks] : by_stream)
      if (!ranks.empty()) findings->push_back(MakeWorkerFinding(stream, ranks));
  }

  static Finding MakeWorkerFinding(const std::string& stream,
                                   const std::map<int, WorkerCollision>& ranks) {
    Finding f;
    f.kind = std::string(kind::kRngCollision);
    f.severity = Severity::kWarning;
    f.subject = stream;
    const WorkerCollision& first = ranks.begin()->second;
    f.step = first.step;
    JsonValue per_rank = JsonValue::Array();
    for (const auto& [rank, c] : ranks) {
      f.ranks.push_back(rank);
      f.step = std::min(*f.step, c.step);
      JsonValue entry = JsonValue::Object();
      entry.Set("rank", rank);
      entry.Set("loader", c.loader);
      entry.Set("occurrence", c.nth);
      JsonValue groups = JsonValue::Array();
      for (const auto& g : c.groups) {
        JsonValue group = JsonValue::Object();
        JsonValue workers = JsonValue::Array();
        for (int w : g.ranks) workers.Push(w);
        group.Set("workers", std::move(workers));
        char hex[17];
        std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(g.value));
        group.Set("h", std::string(hex));
        groups.Push(std::move(group));
      }
      entry.Set("groups", std::move(groups));
      per_rank.Push(std::move(entry));
    }
    std::string workers;
    for (int w : first.groups.front().ranks)
      workers += (workers.empty() ? "" : ",") + std::to_string(w);
    const std::string where = "workers " + workers + " of " + first.loader;
    f.summary =
        "RNG stream \"" + stream + "\" has the same state in DataLoader " +
        (ranks.size() == 1 ? where + " on rank " + std::to_string(first.rank)
                           : "workers of one rank, on ranks " + FormatRankRanges(f.ranks) +
                                 " (rank " + std::to_string(first.rank) + ": " + where + ")") +
        ": the workers of a rank draw the same augmentations";
    f.evidence.Set("stream", stream);
    f.evidence.Set("scope", "workers of one rank");
    f.evidence.Set("ranks", std::move(per_rank));
    f.hint =
        "A worker_init_fn that seeds NumPy or random with a value every worker of the rank "
        "shares (base_seed + rank) gives each worker the same stream. Derive the seed from "
        "torch.initial_seed() inside the worker (torch makes it differ per worker and pass), "
        "or use base_seed + rank * num_workers + worker_id.";
    return f;
  }

  std::map<std::tuple<int, std::string, std::string>, int> occurrences_;
  std::map<WorkerKey, std::vector<Draw>> workers_;  // Draw::rank holds the worker id
  std::map<std::tuple<std::string, std::string, int>, std::vector<Draw>> draws_;
};

}  // namespace

std::unique_ptr<Analyzer> CreateRngCollisionAnalyzer() {
  return std::make_unique<RngCollisionAnalyzer>();
}

}  // namespace dsdiag::analyzers
