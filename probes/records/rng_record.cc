#include "probes/records/rng_record.h"

#include "probes/probe_timer.h"
#include "probes/session.h"
#include "trace/record_types.h"

namespace dsdiag::probes::records {

void WriteRng(probes::Session* session, std::string_view stream, std::string_view why, int64_t seed,
              uint64_t state_hash) noexcept {
  if (!session->on()) return;
  ProbeTimer timer(session);
  auto record = session->writer()->Begin(trace::rec::kRng);
  record.line().Field("stream", stream).Field("why", why).Field("seed", seed).Hex("h", state_hash);
}

}  // namespace dsdiag::probes::records
