// The `coll` record (docs/trace-format.md, "`coll`"): one collective or barrier as it ended
// (`ts` = when it was issued, `dur` = issue to completion). (`pg`, `seq`) is the same op on
// every rank: how the analyzers align ranks. Written by the probes' CollectiveSteps and by
// the reader in place of a v2 `colls` record (colls_record.h); read by collective-mismatch,
// hang, straggler, rank-died, the timeline and the report.
//
//   {"type":"coll","ts":7000,"step":3,"pg":0,"seq":17,"op":"allreduce","dtype":"f32",
//    "n":12288,"bytes":49152,"dur":2100000,"tag":"grad-bucket-2","site":3}
//
// `site` names the call site's `site` record (records/site_record.h), when the writer knew it.
//
// An op with per-peer sizes (an all_to_all with split sizes) adds what it sent to and
// received from each rank of its group (trace/peer_counts.h), `peers` only on a sub-group:
//   ..."op":"alltoall","n":288,...,"send":[64,96,32],"recv":[96,96,96],"peers":[0,2,4]
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "trace/peer_counts.h"
#include "trace/record.h"
#include "trace/records/span.h"

namespace dsdiag::trace {
class JsonLine;
}  // namespace dsdiag::trace

namespace dsdiag::trace::records {

struct CollKeys {
  static constexpr FieldKey pg{"pg"};             // process group: 0 the default, then 1, 2, ...
  static constexpr FieldKey seq{"seq"};           // the group's sequence number
  static constexpr FieldKey op{"op"};             // "allreduce", "broadcast", "barrier", ...
  static constexpr FieldKey dtype{"dtype"};       // "f32", ...; "none" for a barrier
  static constexpr FieldKey count{"n"};           // elements
  static constexpr FieldKey bytes{"bytes"};       // payload: count x the element size
  static constexpr FieldKey dur = SpanKeys::dur;  // ns from issue to completion
  static constexpr FieldKey tag{"tag"};           // what the op is for: grad-bucket-2, ...
  static constexpr FieldKey failed{"failed"};     // true: the backend threw, the op never completed
  static constexpr FieldKey send{"send"};         // elements sent to each rank of the group
  static constexpr FieldKey recv{"recv"};         // elements received from each rank of it
  static constexpr FieldKey peers{"peers"};       // the group's global ranks (sub-groups only)
  static constexpr FieldKey site{"site"};         // its call site's `site` record id (absent: 0)
};

struct CollRecord {
  static constexpr std::string_view kType = rec::kCollective;
  int64_t pg = 0;
  int64_t seq = 0;
  std::string_view op;
  std::string_view dtype;
  int64_t count = 0;  // elements ("n")
  int64_t bytes = 0;
  int64_t dur = 0;
  std::string_view tag;
  bool failed = false;                 // written only when true
  const PeerCounts* counts = nullptr;  // null, or empty: no per-peer sizes
  int64_t site = 0;                    // written only when not 0 (unknown)
};
void AppendFields(const CollRecord& r, JsonLine* line);

class CollView {
 public:
  explicit CollView(const Record& r) : r_(r) {}
  std::optional<int64_t> pg() const { return r_.Int(CollKeys::pg); }
  std::optional<int64_t> seq() const { return r_.Int(CollKeys::seq); }
  std::optional<std::string_view> op() const { return r_.Str(CollKeys::op); }
  std::optional<std::string_view> dtype() const { return r_.Str(CollKeys::dtype); }
  std::optional<int64_t> count() const { return r_.Int(CollKeys::count); }
  std::optional<int64_t> bytes() const { return r_.Int(CollKeys::bytes); }
  std::optional<int64_t> dur() const { return r_.Int(CollKeys::dur); }
  std::optional<std::string_view> tag() const { return r_.Str(CollKeys::tag); }
  bool failed() const { return r_.Bool(CollKeys::failed).value_or(false); }
  // The `site` record id of its call site; 0: unknown (a trace from before sites).
  int64_t site() const { return r_.Int(CollKeys::site).value_or(0); }
  // The per-peer sizes, when the record has them (false and *out empty otherwise).
  bool counts(PeerCounts* out) const;

 private:
  const Record& r_;
};

}  // namespace dsdiag::trace::records
