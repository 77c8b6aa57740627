// What the ranks of one local launch share before they meet: a run id and a free port on
// 127.0.0.1 for rank 0's TCPStore (MASTER_PORT).
#pragma once

#include <cstdint>
#include <string>

namespace dsdiag::launch {

// A free TCP port on 127.0.0.1 (bound to port 0, read back, released). Throws LaunchError.
int PickFreePort();
// "20261130-081500-4f2a9c1e": the local time of `wall_ns` (CLOCK_REALTIME ns; now when
// negative) plus 32 random bits.
std::string MakeRunId(int64_t wall_ns = -1);

}  // namespace dsdiag::launch
