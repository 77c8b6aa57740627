#include "probes/records/loader_record.h"

#include "probes/records/write_record.h"
#include "trace/records/loader_record.h"

namespace dsdiag::probes::records {

void WriteLoader(probes::Session* session, int64_t wait, int64_t produce, int64_t samples,
                 uint64_t batch) noexcept {
  trace::records::LoaderRecord r;
  r.wait = wait;
  r.produce = produce;
  r.samples = samples;
  r.batch = batch;
  WriteRecord(session, r);
}

}  // namespace dsdiag::probes::records
