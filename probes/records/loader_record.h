// The `loader` record (trace/records/loader_record.h): one batch of the training loop's data
// loader, how long the loop waited for it and, when visible, how long it took to make.
// Written by the trainer's data stream and the Python package's DataLoader probe for every
// training batch. One branch when probes are off. Torch-free.
#pragma once

#include <cstdint>

#include "probes/records/session_fwd.h"

namespace dsdiag::probes::records {

// One batch: `wait` ns the loop blocked on it; `produce` ns spent making it when that is
// visible (the batch was made on the main thread), else negative and left out. `batch`: a
// fingerprint of a sample of the batch's bytes (0: none taken, left out).
void WriteLoader(probes::Session* session, int64_t wait, int64_t produce, int64_t samples,
                 uint64_t batch = 0) noexcept;

}  // namespace dsdiag::probes::records
