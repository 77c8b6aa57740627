#include "probes/records/sampler_record.h"

#include "probes/records/write_record.h"

namespace dsdiag::probes::records {

void WriteSampler(probes::Session* session, const SamplerRecord& r) noexcept {
  WriteRecord(session, r);
}

}  // namespace dsdiag::probes::records
