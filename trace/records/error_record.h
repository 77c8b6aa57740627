// The `error` record (docs/trace-format.md, "Other records"): an exception or failure, where
// it happened (a component or phase) and its message; for a rank of `dsdiag train` that could
// not publish its error to the rendezvous store, a second one saying so. Written by the
// session (Session::RecordError) and the trainer; read by the run's dispatch (rank fates),
// hang, rank-died and the timeline.
//
//   {"type":"error","step":7,"where":"watchdog","message":"allreduce pg 0 seq 40 timed out"}
//   {"type":"error","step":7,"where":"store","message":"...","store_unreachable":true,
//    "store":"10.0.0.1:29500","tried_ms":2000,"store_error":"Connection refused"}
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "trace/record.h"

namespace dsdiag::trace {
class JsonLine;
}  // namespace dsdiag::trace

namespace dsdiag::trace::records {

struct ErrorKeys {
  static constexpr FieldKey where{"where"};  // "watchdog", "trainer", "store", a phase, ...
  static constexpr FieldKey message{"message"};
  // Optional: the collective that failed or timed out, as in its `coll` record.
  static constexpr FieldKey pg{"pg"};
  static constexpr FieldKey seq{"seq"};
  static constexpr FieldKey op{"op"};
  static constexpr FieldKey tag{"tag"};
  // The `store` error only:
  static constexpr FieldKey store_unreachable{"store_unreachable"};
  static constexpr FieldKey store{"store"};  // "MASTER_ADDR:PORT"
  static constexpr FieldKey tried_ms{"tried_ms"};
  static constexpr FieldKey store_error{"store_error"};  // the store client's, when it raised
};

struct ErrorRecord {
  static constexpr std::string_view kType = rec::kError;
  std::string_view where;
  std::string_view message;
  bool names_collective = false;  // pg, seq, op and tag are written
  int64_t pg = 0, seq = 0;
  std::string_view op, tag;
};
void AppendFields(const ErrorRecord& r, JsonLine* line);

// The rendezvous store could not be reached to publish this rank's error.
struct StoreUnreachableRecord {
  static constexpr std::string_view kType = rec::kError;
  std::string_view message;
  std::string_view store;
  int64_t tried_ms = 0;
  std::string_view store_error;  // empty: left out
};
void AppendFields(const StoreUnreachableRecord& r, JsonLine* line);

class ErrorView {
 public:
  explicit ErrorView(const Record& r) : r_(r) {}
  std::optional<std::string_view> where() const { return r_.Str(ErrorKeys::where); }
  std::optional<std::string_view> message() const { return r_.Str(ErrorKeys::message); }
  std::optional<int64_t> pg() const { return r_.Int(ErrorKeys::pg); }
  std::optional<int64_t> seq() const { return r_.Int(ErrorKeys::seq); }
  std::optional<std::string_view> op() const { return r_.Str(ErrorKeys::op); }
  std::optional<std::string_view> tag() const { return r_.Str(ErrorKeys::tag); }
  bool store_unreachable() const { return r_.Bool(ErrorKeys::store_unreachable).value_or(false); }
  std::optional<std::string_view> store() const { return r_.Str(ErrorKeys::store); }
  std::optional<int64_t> tried_ms() const { return r_.Int(ErrorKeys::tried_ms); }
  std::optional<std::string_view> store_error() const { return r_.Str(ErrorKeys::store_error); }

 private:
  const Record& r_;
};

}  // namespace dsdiag::trace::records
