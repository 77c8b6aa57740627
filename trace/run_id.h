// The run id every rank of one run shares: it names the run in headers, flight dumps and
// findings, and tells a stray file of another run apart.
#pragma once

#include <cstdint>
#include <string>

namespace dsdiag::trace {

// "20261130-081500-4f2a9c1e": the local time of `wall_ns` (CLOCK_REALTIME ns; now when
// negative) plus 32 random bits.
std::string MakeRunId(int64_t wall_ns = -1);

}  // namespace dsdiag::trace
