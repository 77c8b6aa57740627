// config-mismatch: ranks that were started differently.
//
// Input: the headers of the analysed ranks (RunContext::ranks), e.g.
//   "versions":{"dsdiag":"0.1.0","libtorch":"1.13.1"},
//   "env":{"NCCL_DEBUG":"WARN","OMP_NUM_THREADS":"1"},
//   "config":{"steps":50,"batch_size":8,"amp":"off"}
// Every key of versions, env and config is compared across ranks, plus world_size; a key
// present on some ranks only is a difference too ("absent" is one of its values). Ranks are
// grouped by value: when one group is larger than every other it is the reference and every
// other rank is odd and named in `ranks`; when none is (two ranks, 2 against 2) every rank of
// the split is named and the summary says there is no majority (split_verdict.h). One finding per
// key, subject
// "<section>.<key>" (or "world_size"). Severity: versions, config and world_size → error
// (the ranks do not run the same program); env → warning (often harmless, sometimes the
// cause). The header section `determinism` (deterministic algorithms, cudnn.deterministic /
// benchmark, intra-op threads) is compared too → warning. Env variables that differ per rank by
// design are not compared: kPerRankEnv.
#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "analyzers/framework/analyzer_factories.h"
#include "analyzers/framework/finding_kinds.h"
#include "analyzers/kinds/common/evidence_text.h"

namespace dsdiag::analyzers {
namespace {

using trace::JsonValue;

// Launchers give each process its own value of these: rank ids, local ids, node ids and
// host names (torchrun, Open MPI, PMI/PMIx, MVAPICH, Slurm).
constexpr std::string_view kPerRankEnv[] = {
    "RANK",
    "LOCAL_RANK",
    "GROUP_RANK",
    "ROLE_RANK",
    "OMPI_COMM_WORLD_RANK",
    "OMPI_COMM_WORLD_LOCAL_RANK",
    "OMPI_COMM_WORLD_NODE_RANK",
    "PMI_RANK",
    "PMIX_RANK",
    "MV2_COMM_WORLD_RANK",
    "MV2_COMM_WORLD_LOCAL_RANK",
    "SLURM_PROCID",
    "SLURM_LOCALID",
    "SLURM_NODEID",
    "SLURM_TASK_PID",
    "SLURM_GTIDS",
    "SLURMD_NODENAME",
    "SLURM_TOPOLOGY_ADDR",
    "HOSTNAME",
};

constexpr size_t kMaxValuesListed = 8;
constexpr size_t kMaxValueText = 40;

bool IsPerRankEnv(std::string_view key) {
  return std::find(std::begin(kPerRankEnv), std::end(kPerRankEnv), key) != std::end(kPerRankEnv);
}

// One value of a key and the ranks holding it; `value` is empty when the key is absent.
struct ValueGroup {
  std::optional<JsonValue> value;
  std::vector<int> ranks;
};

// A key's value on each rank that has it, in rank order.
using KeyValues = std::map<std::string, std::vector<std::pair<int, JsonValue>>>;

std::vector<ValueGroup> GroupByValue(const std::vector<std::pair<int, JsonValue>>& values,
                                     const std::vector<int>& all_ranks) {
  std::vector<ValueGroup> groups;
  ValueGroup absent;
  size_t next = 0;
  for (int rank : all_ranks) {
    if (next < values.size() && values[next].first == rank) {
      const JsonValue& v = values[next++].second;
      auto it = std::find_if(groups.begin(), groups.end(),
                             [&](const ValueGroup& g) { return g.value && *g.value == v; });
      if (it == groups.end()) {
        groups.push_back({v, {rank}});
      } else {
        it->ranks.push_back(rank);
      }
    } else {
      absent.ranks.push_back(rank);
    }
  }
  if (!absent.ranks.empty()) groups.push_back(std::move(absent));
  // The reference first: the most ranks, then the lowest rank.
  std::stable_sort(groups.begin(), groups.end(), [](const ValueGroup& a, const ValueGroup& b) {
    if (a.ranks.size() != b.ranks.size()) return a.ranks.size() > b.ranks.size();
    return a.ranks.front() < b.ranks.front();
  });
  return groups;
}

std::string ValueText(const ValueGroup& g) {
  if (!g.value) return "(absent)";
  std::string text = g.value->ToDisplay();
  if (text.size() > kMaxValueText) text = text.substr(0, kMaxValueText - 3) + "...";
  return g.value->kind() == JsonValue::Kind::kString ? "\"" + text + "\"" : text;
}

struct Section {
  std::string_view name;  // "versions", "env", "config", or "" for world_size
  Severity severity;
  std::string hint;
};

Finding MakeFinding(const Section& section, const std::string& key,
                    const std::vector<ValueGroup>& groups) {
  Finding f;
  f.kind = std::string(kind::kConfigMismatch);
  f.severity = section.severity;
  f.subject = section.name.empty() ? key : std::string(section.name) + "." + key;
  // A tie (two ranks, 2 against 2) has no reference: every rank of the split is named.
  const bool majority = groups[0].ranks.size() > groups[1].ranks.size();
  for (size_t i = majority ? 1 : 0; i < groups.size(); ++i)
    f.ranks.insert(f.ranks.end(), groups[i].ranks.begin(), groups[i].ranks.end());
  NormalizeRanks(&f.ranks);

  std::string odd;
  for (size_t i = 1; i < groups.size() && i <= 2; ++i)
    odd += (i > 1 ? ", " : "") + ValueText(groups[i]) + " on " + OnRanks(groups[i].ranks);
  if (groups.size() > 3) odd += ", and " + std::to_string(groups.size() - 3) + " more values";
  if (majority) {
    f.summary = *f.subject + " differs: " + odd + " vs " + ValueText(groups[0]) + " on " +
                OnRanks(groups[0].ranks);
  } else {
    f.summary = *f.subject + " differs, with no majority: " + ValueText(groups[0]) + " on " +
                OnRanks(groups[0].ranks) + ", " + odd +
                " (nothing in the traces says which is the intended setting)";
  }

  JsonValue values = JsonValue::Array();
  for (size_t i = 0; i < groups.size() && i < kMaxValuesListed; ++i) {
    JsonValue v = JsonValue::Object();
    v.Set("value", groups[i].value.value_or(JsonValue()));
    if (!groups[i].value) v.Set("absent", true);
    JsonValue ranks = JsonValue::Array();
    for (int r : groups[i].ranks) ranks.Push(r);
    v.Set("ranks", std::move(ranks));
    values.Push(std::move(v));
  }
  f.evidence.Set("key", *f.subject);
  f.evidence.Set("distinct_values", static_cast<int64_t>(groups.size()));
  f.evidence.Set("majority", majority);
  f.evidence.Set("values", std::move(values));
  f.hint = section.hint;
  return f;
}

class ConfigMismatchAnalyzer : public Analyzer {
 public:
  std::string_view name() const override { return kind::kConfigMismatch; }
  bool wants_records() const override { return false; }

  // Everything needed is in the headers: the findings are ready before any record.
  void Begin(const RunContext& run) override {
    if (run.ranks.size() < 2) return;
    for (const auto& r : run.ranks) all_ranks_.push_back(r.rank);
    CompareWorldSize(run);
    KeyValues versions, env, config, determinism;
    for (const auto& r : run.ranks) {
      for (const auto& [k, v] : r.header.versions) versions[k].emplace_back(r.rank, JsonValue(v));
      for (const auto& [k, v] : r.header.env)
        if (!IsPerRankEnv(k)) env[k].emplace_back(r.rank, JsonValue(v));
      for (const auto& [k, v] : r.header.config.members()) config[k].emplace_back(r.rank, v);
      if (const JsonValue* det = r.header.sections.Find("determinism"); det && det->is_object())
        for (const auto& [k, v] : det->members()) determinism[k].emplace_back(r.rank, v);
    }
    CompareSection({"versions", Severity::kError,
                    "Ranks run different builds: a mixed container image or a node with another "
                    "install. Run every rank from one pinned image or environment."},
                   versions);
    CompareSection({"config", Severity::kError,
                    "Ranks were started with different settings: pass the same flags and config "
                    "file to every rank (a per-node launch script or a stale config file is the "
                    "usual cause)."},
                   config);
    CompareSection({"env", Severity::kWarning,
                    "Set this variable identically for every rank (export it from the launcher "
                    "rather than per-node profiles), or confirm the difference is intended, "
                    "e.g. a per-node network interface name."},
                   env);
    CompareSection({"determinism", Severity::kWarning,
                    "Set the determinism switches (torch.use_deterministic_algorithms, "
                    "cudnn.deterministic, cudnn.benchmark) and the intra-op thread count the "
                    "same way on every rank, before the process group starts: ranks that pick "
                    "kernels differently compute (and run) differently."},
                   determinism);
  }

  void Finish(const RunContext&, std::vector<Finding>* findings) override {
    for (auto& f : findings_) findings->push_back(std::move(f));
    findings_.clear();
  }

 private:
  void CompareWorldSize(const RunContext& run) {
    std::vector<std::pair<int, JsonValue>> values;
    for (const auto& r : run.ranks) values.emplace_back(r.rank, JsonValue(r.header.world_size));
    CompareKey({"", Severity::kError,
                "Ranks disagree on the world size: they were started by different launch "
                "commands or joined another job's rendezvous. Check WORLD_SIZE / --nproc and "
                "MASTER_ADDR:MASTER_PORT on every node."},
               "world_size", values);
  }

  void CompareSection(const Section& section, const KeyValues& keys) {
    for (const auto& [key, values] : keys) CompareKey(section, key, values);
  }

  void CompareKey(const Section& section, const std::string& key,
                  const std::vector<std::pair<int, JsonValue>>& values) {
    const std::vector<ValueGroup> groups = GroupByValue(values, all_ranks_);
    if (groups.size() > 1) findings_.push_back(MakeFinding(section, key, groups));
  }

  std::vector<int> all_ranks_;
  std::vector<Finding> findings_;
};

}  // namespace

std::unique_ptr<Analyzer> CreateConfigMismatchAnalyzer() {
  return std::make_unique<ConfigMismatchAnalyzer>();
}

}  // namespace dsdiag::analyzers
