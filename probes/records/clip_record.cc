#include "probes/records/clip_record.h"

#include "probes/records/write_record.h"
#include "trace/records/clip_record.h"

namespace dsdiag::probes::records {

void WriteClip(probes::Session* session, bool unscaled, double norm, double max) noexcept {
  trace::records::ClipRecord r;
  r.unscaled = unscaled;
  r.norm = norm;
  r.max = max;
  WriteRecord(session, r);
}

}  // namespace dsdiag::probes::records
