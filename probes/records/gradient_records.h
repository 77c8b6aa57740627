// The gradient records (trace/records/grad_record.h, fp_record.h), written through the
// session by GradientProbe (LibTorch) and by the Python package's model probe, so that both
// write the same bytes:
//
//   {"type":"grad","step":3,"norm":1.73,"n_missing":2,"missing":[14,15]}
//   {"type":"fp","step":3,"what":"grad","why":"after-sync","gran":"bucket","h":["9f3c..",..]}
//
// `grad`: after backward, before the sync — the global norm (NaN: non-finite) and which
// parameters took no part in this backward. `fp`: fingerprints of gradients or parameters at
// a point of the step (`why`). One branch when probes are off. Torch-free.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "probes/records/session_fwd.h"
#include "trace/records/grad_record.h"

namespace dsdiag::probes::records {

using GradRecord = trace::records::GradRecord;
void WriteGrad(probes::Session* session, const GradRecord& r) noexcept;

// `what`: "grad", "param" or "buffer"; `why`: "after-sync", "pre-step", "init", "resume",
// "periodic", "final"; `per_param`: one hash per tensor ("param") or per bucket ("bucket");
// `fn`: empty for xxHash3, else how the hashes were taken (trace::records::kFnDeviceSum).
void WriteFingerprints(probes::Session* session, std::string_view what, std::string_view why,
                       bool per_param, const std::vector<uint64_t>& hashes,
                       std::string_view fn = {}) noexcept;

}  // namespace dsdiag::probes::records
