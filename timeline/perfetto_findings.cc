#include "timeline/perfetto_findings.h"

#include <string>
#include <string_view>

#include "analyzers/framework/finding.h"
#include "timeline/finding_args.h"
#include "timeline/perfetto_fields.h"
#include "timeline/perfetto_inline_args.h"
#include "timeline/perfetto_rank_out.h"

namespace dsdiag::timeline {

namespace pf = perfetto_fields;
namespace {

constexpr uint64_t kGlobalFindingsTrack = 1;  // below every rank's uuid

void WriteFinding(const PlacedFinding& p, uint64_t track, int64_t ts_ns, PerfettoTraceWriter* out) {
  ProtoEncoder pb = out->BeginPacket(PerfettoTraceWriter::kInlineNamesSequence, ts_ns);
  const size_t event = pb.Begin(pf::kTrackEvent);
  pb.Varint(pf::kEventType, pf::kTypeInstant);
  pb.Varint(pf::kEventTrackUuid, track);
  pb.String(pf::kEventName, FindingEventName(*p.finding));
  pb.String(pf::kEventCategories, "finding");
  PerfettoInlineArgs args(pb);
  AddFindingArgs(*p.finding, &args);
  pb.End(event);
  out->EndPacket();
}

}  // namespace

void WritePerfettoFindings(const std::vector<PlacedFinding>& placed, const std::set<int>& written,
                           int64_t start_ns, PerfettoTraceWriter* out) {
  std::set<int> tracked;  // ranks whose "findings" track is out
  bool global = false;
  for (const PlacedFinding& p : placed) {
    uint64_t track = kGlobalFindingsTrack;
    if (p.scope == 'g') {
      if (!global) out->Track(kGlobalFindingsTrack, 0, "findings", -1);
      global = true;
    } else {
      track = PerfettoRankOut::FindingsTrack(p.pid);
      if (tracked.insert(p.pid).second) {
        if (!written.count(p.pid)) {
          out->Track(PerfettoRankOut::RootTrack(p.pid), 0,
                     "rank " + std::to_string(p.pid) + " (no usable trace)", p.pid);
        }
        out->Track(track, PerfettoRankOut::RootTrack(p.pid), "findings", -2);
      }
    }
    WriteFinding(p, track, p.has_time ? p.ts_ns : start_ns, out);
  }
}

}  // namespace dsdiag::timeline
