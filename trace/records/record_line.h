// Writing one record of trace/records/ as a whole line, outside a TraceWriter: `dsdiag synth`
// and the test support library build traces so. The common fields (type, ts, step, tid),
// then the record's own fields (its AppendFields), then the line's end — the same bytes the
// writer produces for the same values.
//
//   records::LoaderRecord loader; loader.wait = 5000000;
//   records::AppendRecordLine(loader, records::At{t, 3}, &out);
#pragma once

#include <cstdint>
#include <string>

#include "trace/json_line.h"
#include "trace/record_types.h"

namespace dsdiag::trace::records {

// The common fields of a record: docs/trace-format.md, "Fields on every record".
struct At {
  int64_t ts = 0;    // rank-local monotonic ns
  int64_t step = 0;  // the rank's current step
  int tid = 0;       // 0: the main thread (left out)
};

inline JsonLine BeginRecordLine(std::string_view type, const At& at, std::string* out) {
  JsonLine line(out);
  line.Field(kFieldType, type).Field(kFieldTs, at.ts).Field(kFieldStep, at.step);
  if (at.tid != 0) line.Field(kFieldTid, at.tid);
  return line;
}

// R is one of the record structs of trace/records/: it names its type (R::kType) and has an
// AppendFields overload.
template <class R>
void AppendRecordLine(const R& record, const At& at, std::string* out) {
  JsonLine line = BeginRecordLine(R::kType, at, out);
  AppendFields(record, &line);
  line.Finish();
}

}  // namespace dsdiag::trace::records
