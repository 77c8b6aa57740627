// checkpoint-race: several ranks wrote the same checkpoint file.
//
// Input: `ckpt` records, span records (ts = start, dur):
//   {"type":"ckpt","ts":..,"step":4,"op":"save","path":"run/checkpoints/step-00000005.pt",
//    "bytes":781947,"h":"de70..","ckpt_step":5,"epoch":0,"dur":14141242}
// The classic bug is a save without `if rank == 0`: every rank writes the same path, the last
// rename wins, and a reader (or a rank loading while another writes) may get a torn or mixed
// file. Saves are collected per path; a path saved by more than one rank is an error, and so
// is a load of a path while another rank was saving it. Times are compared on rank 0's clock
// (rank_clock.h), so the evidence says whether the writes overlapped. Sharded checkpoints
// (each rank its own path) are not a race. One finding for the run at the first such save;
// its subject is the first path, and the evidence counts the others.
#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "analyzers/framework/analyzer_factories.h"
#include "analyzers/framework/finding_kinds.h"
#include "trace/rank_clock.h"
#include "trace/record_types.h"
#include "trace/records/ckpt_record.h"

namespace dsdiag::analyzers {

namespace records = trace::records;
namespace {

using trace::JsonValue;

constexpr size_t kMaxPathsListed = 10;

struct CkptOp {
  int rank = 0;
  bool save = true;
  int64_t step = 0;
  int64_t ckpt_step = 0;
  int64_t start = 0;  // rank 0's clock, ns
  int64_t end = 0;
};

// What one path suffered.
struct PathRace {
  std::string path;
  std::vector<int> ranks;  // every rank that saved or loaded it, sorted
  int64_t step = 0;        // step of the first save
  int64_t ckpt_step = 0;
  bool overlapped = false;  // two ranks' operations overlapped in time
  bool load_during_save = false;
  std::vector<const CkptOp*> ops;
};

bool Overlap(const CkptOp& a, const CkptOp& b) { return a.start < b.end && b.start < a.end; }

class CheckpointRaceAnalyzer : public Analyzer {
 public:
  std::string_view name() const override { return kind::kCheckpointRace; }
  std::vector<std::string_view> record_types() const override {
    return {trace::rec::kClock, trace::rec::kCheckpoint};
  }

  void Begin(const RunContext& run) override {
    for (const RankInfo& r : run.ranks) clocks_[r.rank] = trace::RankClock(r.header.clock);
  }

  void OnRecord(const RankInfo& rank, const trace::Record& r) override {
    if (r.type_id() == trace::rec_id::kClock) {
      clocks_[rank.rank].Refine(r);
      return;
    }
    if (r.type_id() != trace::rec_id::kCheckpoint) return;
    const records::CkptView ckpt(r);
    const auto op = ckpt.op();
    const auto path = ckpt.path();
    if (!op || !path || (*op != records::kCkptSave && *op != records::kCkptLoad)) return;
    CkptOp c;
    c.rank = rank.rank;
    c.save = *op == records::kCkptSave;
    c.step = r.step();
    c.ckpt_step = ckpt.ckpt_step().value_or(r.step());
    c.start = clocks_[rank.rank].ToRank0(r.ts());
    c.end = c.start + std::max<int64_t>(0, ckpt.dur().value_or(0));
    ops_[std::string(*path)].push_back(c);
  }

  void Finish(const RunContext&, std::vector<Finding>* findings) override {
    std::vector<PathRace> races;
    for (const auto& [path, ops] : ops_) {
      if (auto race = Judge(path, ops)) races.push_back(std::move(*race));
    }
    if (races.empty()) return;
    std::stable_sort(races.begin(), races.end(),
                     [](const PathRace& a, const PathRace& b) { return a.step < b.step; });
    findings->push_back(MakeFinding(races));
  }

 private:
  static std::optional<PathRace> Judge(const std::string& path, const std::vector<CkptOp>& ops) {
    PathRace race;
    race.path = path;
    std::set<int> savers, ranks;
    bool first_save = true;
    for (const CkptOp& a : ops) {
      ranks.insert(a.rank);
      if (!a.save) continue;
      savers.insert(a.rank);
      if (first_save || a.step < race.step) {
        race.step = a.step;
        race.ckpt_step = a.ckpt_step;
        first_save = false;
      }
      for (const CkptOp& b : ops) {
        if (b.rank == a.rank || !Overlap(a, b)) continue;
        if (b.save) race.overlapped = true;
        if (!b.save) race.load_during_save = true;
      }
    }
    if (savers.size() < 2 && !race.load_during_save) return std::nullopt;
    race.ranks.assign(ranks.begin(), ranks.end());
    for (const CkptOp& a : ops) race.ops.push_back(&a);
    return race;
  }

  Finding MakeFinding(const std::vector<PathRace>& races) const {
    const PathRace& first = races.front();
    Finding f;
    f.kind = std::string(kind::kCheckpointRace);
    f.severity = Severity::kError;
    for (const PathRace& r : races) f.ranks.insert(f.ranks.end(), r.ranks.begin(), r.ranks.end());
    NormalizeRanks(&f.ranks);
    f.step = first.step;
    f.subject = first.path;
    const std::string who =
        (first.ranks.size() == 1 ? "rank " : "ranks ") + FormatRankRanges(first.ranks);
    f.summary = who + (first.load_during_save ? " saved and loaded " : " all saved ") + first.path +
                " (checkpoint of step " + std::to_string(first.ckpt_step) + ")" +
                (first.overlapped || first.load_during_save ? ", at the same time" : "");
    if (races.size() > 1)
      f.summary += "; " + std::to_string(races.size() - 1) + " more path" +
                   (races.size() > 2 ? "s" : "") + " alike";
    f.hint =
        "Save from one rank only (if rank == 0: save; then a barrier before anyone loads), or "
        "give each rank its own path for sharded state. Concurrent writers to one path leave a "
        "file mixed from several ranks or truncated, and the last rename silently wins.";
    JsonValue writes = JsonValue::Array();
    int64_t t0 = INT64_MAX;
    for (const CkptOp* op : first.ops) t0 = std::min(t0, op->start);
    for (const CkptOp* op : first.ops) {
      JsonValue w = JsonValue::Object();
      w.Set("rank", op->rank);
      w.Set("op", op->save ? "save" : "load");
      w.Set("start_ms", static_cast<double>(op->start - t0) / 1e6);
      w.Set("dur_ms", static_cast<double>(op->end - op->start) / 1e6);
      writes.Push(std::move(w));
    }
    JsonValue paths = JsonValue::Array();
    for (size_t i = 0; i < races.size() && i < kMaxPathsListed; ++i) paths.Push(races[i].path);
    f.evidence.Set("ckpt_step", first.ckpt_step);
    f.evidence.Set("operations", std::move(writes));
    f.evidence.Set("overlapped", first.overlapped || first.load_during_save);
    f.evidence.Set("paths_raced", static_cast<int64_t>(races.size()));
    f.evidence.Set("paths", std::move(paths));
    return f;
  }

  std::map<int, trace::RankClock> clocks_;
  std::map<std::string, std::vector<CkptOp>> ops_;  // path -> operations, in arrival order
};

}  // namespace

std::unique_ptr<Analyzer> CreateCheckpointRaceAnalyzer() {
  return std::make_unique<CheckpointRaceAnalyzer>();
}

}  // namespace dsdiag::analyzers
