// epoch-order-repeat: a rank draws the same sample order in consecutive epochs.
//
// Input: each rank's `sampler` record at the start of every epoch:
//   {"type":"sampler","step":32,"epoch":1,"sampler_epoch":0,"seed":1234,"n":32,"order":".."}
// `order` hashes the index sequence. DistributedSampler shuffles with seed + epoch, so an
// order that repeats from epoch e to e + 1 means set_epoch() was never called (the record's
// `sampler_epoch` says what the sampler was set to). Every epoch then replays one
// permutation: the model sees the batches in the same order and composition, which hurts
// generalisation without any error. Severity: warning (the run is valid, its data order is
// not). Shards of fewer than kMinSamples samples are ignored: a tiny shard can repeat its
// order by chance. Ranks with the same first repeated epoch form one finding.
#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "analyzers/framework/analyzer_factories.h"
#include "analyzers/framework/finding_kinds.h"
#include "trace/record_types.h"
#include "trace/records/sampler_record.h"

namespace dsdiag::analyzers {

namespace records = trace::records;
namespace {

using trace::JsonValue;

constexpr int64_t kMinSamples = 4;

struct Draw {
  int64_t epoch = 0;
  int64_t sampler_epoch = 0;
  uint64_t order = 0;
  int64_t n = 0;
};

struct Repeat {
  int64_t epoch = 0;  // the first epoch whose order repeats its predecessor's
  int64_t step = 0;
  int64_t sampler_epoch = 0;
  int64_t repeats = 0;  // epochs that repeated
};

class EpochOrderRepeatAnalyzer : public Analyzer {
 public:
  std::string_view name() const override { return kind::kEpochOrderRepeat; }
  std::vector<std::string_view> record_types() const override { return {trace::rec::kSampler}; }

  void OnRecord(const RankInfo& rank, const trace::Record& r) override {
    if (r.type_id() != trace::rec_id::kSampler) return;
    const records::SamplerView sampler(r);
    const auto epoch = sampler.epoch();
    const auto order = sampler.order();
    if (!epoch || !order) return;
    Draw d{*epoch, sampler.sampler_epoch().value_or(*epoch), *order, sampler.n().value_or(0)};
    auto last = last_.find(rank.rank);
    if (last != last_.end() && d.epoch == last->second.epoch + 1 && d.order == last->second.order &&
        d.n >= kMinSamples) {
      auto [it, first] = repeats_.try_emplace(rank.rank);
      if (first) it->second = {d.epoch, r.step(), d.sampler_epoch, 0};
      ++it->second.repeats;
    }
    if (last == last_.end() || d.epoch != last->second.epoch) last_[rank.rank] = d;
  }

  void Finish(const RunContext&, std::vector<Finding>* findings) override {
    std::map<int64_t, std::vector<int>> by_epoch;
    for (const auto& [rank, rep] : repeats_) by_epoch[rep.epoch].push_back(rank);
    for (const auto& [epoch, ranks] : by_epoch) findings->push_back(MakeFinding(epoch, ranks));
  }

 private:
  Finding MakeFinding(int64_t epoch, const std::vector<int>& ranks) const {
    Finding f;
    f.kind = std::string(kind::kEpochOrderRepeat);
    f.severity = Severity::kWarning;
    f.ranks = ranks;
    f.subject = "sampler";
    const Repeat& first = repeats_.at(ranks.front());
    int64_t step = first.step, repeats = 0;
    JsonValue per_rank = JsonValue::Object();
    for (int r : ranks) {
      const Repeat& rep = repeats_.at(r);
      step = std::min(step, rep.step);
      repeats = std::max(repeats, rep.repeats);
      per_rank.Set(std::to_string(r), rep.repeats);
    }
    f.step = step;
    f.summary = (ranks.size() == 1 ? "Rank " : "Ranks ") + FormatRankRanges(ranks) +
                " drew the same sample order in epoch " + std::to_string(epoch) + " as in epoch " +
                std::to_string(epoch - 1) + " (sampler epoch " +
                std::to_string(first.sampler_epoch) + "): the sampler's epoch is not advanced";
    f.evidence.Set("epoch", epoch);
    f.evidence.Set("previous_epoch", epoch - 1);
    f.evidence.Set("sampler_epoch", first.sampler_epoch);
    f.evidence.Set("epochs_repeated", repeats);
    f.evidence.Set("epochs_repeated_per_rank", std::move(per_rank));
    f.hint =
        "Call sampler.set_epoch(epoch) at the start of every epoch, on every rank, before "
        "iterating the DataLoader: DistributedSampler shuffles with seed + epoch, so without it "
        "every epoch replays the same permutation.";
    return f;
  }

  std::map<int, Draw> last_;       // rank -> its latest epoch's draw
  std::map<int, Repeat> repeats_;  // rank -> its first repeat
};

}  // namespace

std::unique_ptr<Analyzer> CreateEpochOrderRepeatAnalyzer() {
  return std::make_unique<EpochOrderRepeatAnalyzer>();
}

}  // namespace dsdiag::analyzers
