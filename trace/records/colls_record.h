// The `colls` record (trace v2; docs/trace-format.md, "Version 2"): a step's collectives on
// one group that repeat, op for op, the group's last step with as many ops — their times
// only, in whole microseconds from the record's `ts`. The reader turns it back into `coll`
// records (trace/compact_records.h, trace/collective_template.h): no analyzer sees one.
//
//   {"type":"colls","ts":T,"step":8,"pg":0,"seq":42,"at_us":[0,812,...],"dur_us":[...]}
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
  static constexpr FieldKey at_us{"at_us"};    // each op's issue, µs after ts
  static constexpr FieldKey dur_us{"dur_us"};  // each op's duration, µs
};

struct CollsRecord {
  static constexpr std::string_view kType = rec::kCollectiveRun;
  int64_t pg = 0;
  int64_t seq = 0;
  std::vector<int64_t> at_us;
  std::vector<int64_t> dur_us;
};
void AppendFields(const CollsRecord& r, JsonLine* line);

class CollsView {
 public:
  explicit CollsView(const Record& r) : r_(r) {}
  std::optional<int64_t> pg() const { return r_.Int(CollsKeys::pg); }
  std::optional<int64_t> seq() const { return r_.Int(CollsKeys::seq); }
  bool at_us(std::vector<int64_t>* out) const { return r_.IntArray(CollsKeys::at_us, out); }
  bool dur_us(std::vector<int64_t>* out) const { return r_.IntArray(CollsKeys::dur_us, out); }

 private:
  const Record& r_;
};

}  // namespace dsdiag::trace::records
