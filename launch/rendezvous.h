// What the ranks of one local launch share before they meet: a free port on 127.0.0.1 for
// rank 0's TCPStore (MASTER_PORT), and a run id (trace::MakeRunId, trace/run_id.h).
#pragma once

#include <cstdint>
#include <string>

namespace dsdiag::launch {

// A free TCP port on 127.0.0.1 (bound to port 0, read back, released). Throws LaunchError.
int PickFreePort();

}  // namespace dsdiag::launch
