#include "analyzers/framework/run_context.h"

#include <algorithm>

namespace dsdiag::analyzers {

const RunFlightDump* RunContext::FlightDumpOf(int rank) const {
  auto it = std::lower_bound(flight_dumps.begin(), flight_dumps.end(), rank,
                             [](const RunFlightDump& d, int r) { return d.rank < r; });
  return it != flight_dumps.end() && it->rank == rank ? &*it : nullptr;
}

}  // namespace dsdiag::analyzers
