#include "probes/records/params_record.h"

#include "probes/records/write_record.h"

namespace dsdiag::probes::records {

void WriteParams(probes::Session* session, const ParamsRecord& r) noexcept {
  WriteRecord(session, r);
}

}  // namespace dsdiag::probes::records
