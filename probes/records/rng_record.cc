#include "probes/records/rng_record.h"

#include "probes/records/write_record.h"
#include "trace/records/rng_record.h"

namespace dsdiag::probes::records {

void WriteRng(probes::Session* session, std::string_view stream, std::string_view why, int64_t seed,
              uint64_t state_hash) noexcept {
  trace::records::RngRecord r;
  r.stream = stream;
  r.why = why;
  r.seed = seed;
  r.state_hash = state_hash;
  WriteRecord(session, r);
}

}  // namespace dsdiag::probes::records
