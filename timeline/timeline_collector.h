// TimelineCollector: the analyzer that gathers `dsdiag timeline`'s events in the same single
// streaming pass as compare's findings (as report/run_collector.h does for the report).
//
// Per record, on rank 0's clock (trace/rank_clock.h, refined by the rank's `clock` records):
//   - every rank's `coll` records of the selected steps: the collective index (when each
//     collective's last rank entered: the `wait` of every rank's span);
//   - the selected ranks' events (rank_events.h), into their spools (event_spool.h), and the
//     earliest of them (the origin);
//   - what placing findings needs (finding_placement.h): each rank's clock records, first
//     event and step_begin times.
// Write() then replays the spools rank by rank with the origin and the waits filled in,
// adds the findings as instants and closes the file. Memory: the collective index, the
// spool buffers (a fixed budget), and a few words per rank and selected step.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "analyzers/framework/analyzer.h"
#include "timeline/collective_index.h"
#include "timeline/event_spool.h"
#include "timeline/finding_placement.h"
#include "timeline/perfetto_trace_writer.h"
#include "timeline/rank_events.h"
#include "timeline/selection.h"
#include "timeline/timeline_format.h"
#include "trace/rank_clock.h"

namespace dsdiag::timeline {

struct TimelineStats {
  int ranks = 0;               // processes written
  int64_t events = 0;          // trace events written, metadata included (Perfetto: packets)
  int64_t collectives = 0;     // distinct (pg, seq) indexed for `wait`
  int64_t findings = 0;        // findings written as instants
  int64_t origin_unix_ns = 0;  // rank 0's wall clock at ts 0
};

class TimelineCollector : public analyzers::Analyzer {
 public:
  // The timeline goes to `out` in `format`; temporary files (the JSON's spool, Perfetto's
  // deferred collectives) go in `spool_dir`.
  TimelineCollector(Selection selection, std::string spool_dir, TimelineFormat format,
                    std::ostream* out);
  ~TimelineCollector() override;

  std::string_view name() const override { return "timeline"; }
  void Begin(const analyzers::RunContext& run) override;
  void OnRecord(const analyzers::RankInfo& rank, const trace::Record& record) override;
  void OnRankEnd(const analyzers::RankInfo& rank, const analyzers::RankEnd& end) override;
  void Finish(const analyzers::RunContext&, std::vector<analyzers::Finding>*) override {}

  // After the pass: the rest of the timeline, with `findings` as instants.
  // `progress(done, total)` after each rank written (may be empty). Check the stream
  // afterwards for write errors.
  TimelineStats Write(const analyzers::RunContext& run,
                      const std::vector<analyzers::Finding>& findings,
                      const std::function<void(int, int)>& progress);

 private:
  struct RankState {
    trace::RankClock clock;
    bool selected = false;
    bool keeps_step_begins = false;  // selected, or the lowest analysed rank
    int spool = -1;                  // index in spool_ when selected
    std::unique_ptr<RankEvents> events;
  };

  TimelineStats WriteJson(const analyzers::RunContext& run,
                          const std::vector<PlacedFinding>& placed, TimelineStats stats,
                          const std::function<void(int, int)>& progress);
  TimelineStats WritePerfetto(const analyzers::RunContext& run,
                              const std::vector<PlacedFinding>& placed, TimelineStats stats,
                              const std::function<void(int, int)>& progress);

  const Selection selection_;
  const std::string spool_dir_;
  const TimelineFormat format_;
  std::ostream* const out_;
  std::vector<int> index_of_rank_;        // rank number -> index in run.ranks, -1 when not analysed
  std::vector<RankState> ranks_;          // aligned with run.ranks
  std::vector<RankPlacement> placement_;  // aligned with run.ranks
  std::unique_ptr<SpoolFile> spool_;      // JSON
  std::unique_ptr<PerfettoTraceWriter> perfetto_;  // Perfetto
  CollectiveIndex collectives_;
  std::optional<int64_t> earliest_;  // over the selected ranks' events
};

}  // namespace dsdiag::timeline
