// The `colls` record (trace v2; docs/trace-format.md, "Version 2"): a step's collectives on
// one group that repeat, op for op, the group's last step with as many ops — their times
// only, in whole microseconds from the record's `ts`. The reader turns it back into `coll`
// records (trace/compact_records.h, trace/collective_template.h): no analyzer sees one.
//
//   v2: {"type":"colls","ts":T,"step":8,"pg":0,"seq":42,"at_us":[0,812,...],"dur_us":[...]}
//   v3: {"type":"colls","ts":T,"step":8,"pg":0,"seq":42,"gap_us":[3,...],"dur_us":[809,...]}
//
// v3 writes each op's issue as the gap since the previous op completed: a step's ops on one
// group mostly run back to back, so a gap takes a digit or three where an offset from `ts`
// takes five or six. The same integers either way (at[i] = at[i-1] + dur[i-1] + gap[i-1]).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "trace/record.h"

namespace dsdiag::trace {
class JsonLine;
}  // namespace dsdiag::trace

namespace dsdiag::trace::records {

struct CollsKeys {
  static constexpr FieldKey pg{"pg"};
  static constexpr FieldKey seq{"seq"};        // the first op's; the others follow on
  static constexpr FieldKey at_us{"at_us"};    // v2: each op's issue, µs after ts
  static constexpr FieldKey gap_us{"gap_us"};  // v3: each op's issue but the first, µs
                                               // after the op before it completed
  static constexpr FieldKey dur_us{"dur_us"};  // each op's duration, µs
};

struct CollsRecord {
  static constexpr std::string_view kType = rec::kCollectiveRun;
  int64_t pg = 0;
  int64_t seq = 0;
  std::vector<int64_t> at_us;  // written as v3's gaps
  std::vector<int64_t> dur_us;
};
void AppendFields(const CollsRecord& r, JsonLine* line);

class CollsView {
 public:
  explicit CollsView(const Record& r) : r_(r) {}
  std::optional<int64_t> pg() const { return r_.Int(CollsKeys::pg); }
  std::optional<int64_t> seq() const { return r_.Int(CollsKeys::seq); }
  // Each op's issue (µs after ts) and duration (µs), from v2's `at_us` or v3's `gap_us`;
  // false when neither is there as one integer per op.
  bool times_us(std::vector<int64_t>* at, std::vector<int64_t>* dur) const;

 private:
  const Record& r_;
};

}  // namespace dsdiag::trace::records
