// Collective: one collective (or point-to-point message) as the probes see it — the value the
// scope and the op (probes/collective_probe.h, probes/collective_op.h, probes/peer_op.h),
// the flight recorder's entries and dumps (probes/flight_recorder.h, flight_dump.h) and the
// `coll` writer's step template (collective_template.h) all hold. What repeats from step to
// step is here; what moves (the sequence number, the times) is held beside it.
//
//   trace::Collective what{"allreduce", "f32", /*count=*/n, /*bytes=*/4 * n, "grad-bucket-2"};
//
// `site` is where the job issued it (records/site_record.h), an id the rank's trace resolves
// in its `site` records; being part of the value, it repeats in a v2 `colls` record with the
// rest: a step whose collectives come from the same lines costs no byte more.
// `count` is the element count, written as the records' and dumps' "n" key (formats are
// add-never-rename). Its state in the flight recorder is CollectiveState, one enum for the
// probes' ring and the dump file.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace dsdiag::trace {

enum class CollectiveState { kIssued, kStarted, kCompleted };
// "issued", "started", "completed": the dump's `state` values.
std::string_view CollectiveStateName(CollectiveState state);

struct Collective {
  std::string op;     // "allreduce", "broadcast", "barrier", "send", "recv", ...
  std::string dtype;  // "f32", ...; "none" for a barrier
  int64_t count = 0;  // elements ("n"); < 0 in a dump entry that did not say
  int64_t bytes = 0;  // payload: count x the element size; < 0 likewise
  std::string tag;    // what the op is for: grad-bucket-2, ...
  int64_t site = 0;   // its call site: the rank's `site` record id (0: unknown)

  bool operator==(const Collective& o) const {
    return count == o.count && bytes == o.bytes && site == o.site && op == o.op &&
           dtype == o.dtype && tag == o.tag;
  }
  bool operator!=(const Collective& o) const { return !(*this == o); }
};

// A call site as a trace's `site` record and a dump's `sites` list say it.
struct CallSite {
  int64_t id = 0;  // the rank's number for it, from 1
  std::string file;
  int64_t line = 0;
  std::string fn;
};

}  // namespace dsdiag::trace
