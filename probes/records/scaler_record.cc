#include "probes/records/scaler_record.h"

#include "probes/records/write_record.h"

namespace dsdiag::probes::records {

void WriteScaler(probes::Session* session, const ScalerRecord& r) noexcept {
  WriteRecord(session, r);
}

}  // namespace dsdiag::probes::records
