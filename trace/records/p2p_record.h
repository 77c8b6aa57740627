// The `p2p` record (docs/trace-format.md, "`p2p`"): one point-to-point message as it ended —
// a send to one peer or a recv from one — with its pair's own sequence number. A send or recv
// is not a collective of its group: only two ranks take part, and the backend pairs rank i's
// k-th send to j on a group (with one tag) with j's k-th recv from i there. So `seq` counts
// per (group, peer, direction, tag), never in the group's collective numbering (`coll`
// records' `seq`, which hang and straggler align every rank on). Written by the probes'
// PeerOp; read by collective-mismatch (a send against its recv).
//
//   {"type":"p2p","ts":7000,"step":3,"pg":1,"op":"send","peer":2,"group_peer":1,"seq":4,
//    "dtype":"f32","n":1024,"bytes":4096,"dur":52000,"tag":"isend"}
//
// `peer` is the other rank's global rank, `group_peer` its rank in the group, written only
// where the two differ (a sub-group). `match_tag` is the job's tag, written when not 0.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "trace/record.h"
#include "trace/records/span.h"

namespace dsdiag::trace {
class JsonLine;
}  // namespace dsdiag::trace

namespace dsdiag::trace::records {

inline constexpr std::string_view kP2PSend = "send";
inline constexpr std::string_view kP2PRecv = "recv";

struct P2PKeys {
  static constexpr FieldKey pg{"pg"};                  // process group: 0 the default, 1, ...
  static constexpr FieldKey op{"op"};                  // "send" or "recv"
  static constexpr FieldKey peer{"peer"};              // the other rank, global
  static constexpr FieldKey group_peer{"group_peer"};  // its group rank (where it differs)
  static constexpr FieldKey seq{"seq"};                // the pair's: k-th send i->j, k-th recv
  static constexpr FieldKey match_tag{"match_tag"};    // the job's tag (absent: 0)
  static constexpr FieldKey dtype{"dtype"};            // "f32", ...
  static constexpr FieldKey count{"n"};                // elements
  static constexpr FieldKey bytes{"bytes"};            // count x the element size
  static constexpr FieldKey dur = SpanKeys::dur;       // ns from issue to completion
  static constexpr FieldKey tag{"tag"};                // the call: send, isend, batch_isend_irecv
  static constexpr FieldKey failed{"failed"};          // true: the backend threw
  static constexpr FieldKey site{"site"};              // its call site's `site` record id
};

struct P2PRecord {
  static constexpr std::string_view kType = rec::kP2P;
  int64_t pg = 0;
  std::string_view op;  // kP2PSend, kP2PRecv
  int64_t peer = 0;
  int64_t group_peer = 0;  // written only when it differs from `peer`
  int64_t seq = 0;
  int64_t match_tag = 0;  // written only when not 0
  std::string_view dtype;
  int64_t count = 0;  // elements ("n")
  int64_t bytes = 0;
  int64_t dur = 0;
  std::string_view tag;
  bool failed = false;  // written only when true
  int64_t site = 0;     // written only when not 0 (unknown)
};
void AppendFields(const P2PRecord& r, JsonLine* line);

class P2PView {
 public:
  explicit P2PView(const Record& r) : r_(r) {}
  std::optional<int64_t> pg() const { return r_.Int(P2PKeys::pg); }
  std::optional<std::string_view> op() const { return r_.Str(P2PKeys::op); }
  bool is_send() const { return op() == kP2PSend; }
  bool is_recv() const { return op() == kP2PRecv; }
  std::optional<int64_t> peer() const { return r_.Int(P2PKeys::peer); }
  // The peer's group rank: `group_peer` where written, else the global rank.
  std::optional<int64_t> group_peer() const {
    if (auto g = r_.Int(P2PKeys::group_peer)) return g;
    return peer();
  }
  std::optional<int64_t> seq() const { return r_.Int(P2PKeys::seq); }
  int64_t match_tag() const { return r_.Int(P2PKeys::match_tag).value_or(0); }
  std::optional<std::string_view> dtype() const { return r_.Str(P2PKeys::dtype); }
  std::optional<int64_t> count() const { return r_.Int(P2PKeys::count); }
  std::optional<int64_t> bytes() const { return r_.Int(P2PKeys::bytes); }
  std::optional<int64_t> dur() const { return r_.Int(P2PKeys::dur); }
  std::optional<std::string_view> tag() const { return r_.Str(P2PKeys::tag); }
  bool failed() const { return r_.Bool(P2PKeys::failed).value_or(false); }
  int64_t site() const { return r_.Int(P2PKeys::site).value_or(0); }  // 0: unknown

 private:
  const Record& r_;
};

}  // namespace dsdiag::trace::records
