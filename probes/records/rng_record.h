// The `rng` record (trace/records/rng_record.h): a fingerprint of one random generator's
// state (`cpu`, `cuda:<i>`, `dropout`, `sampler`), with why it was taken and the stream's
// seed. Written by the trainer at init, at each epoch start and periodically, and by the
// Python package's RNG probe. One branch when probes are off. Torch-free.
#pragma once

#include <cstdint>
#include <string_view>

#include "probes/records/session_fwd.h"

namespace dsdiag::probes::records {

void WriteRng(probes::Session* session, std::string_view stream, std::string_view why, int64_t seed,
              uint64_t state_hash) noexcept;

}  // namespace dsdiag::probes::records
