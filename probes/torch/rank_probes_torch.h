// RankProbes for a LibTorch loop: the job's c10d store (a TCPStore) settles the run id and
// the clock offset, and the header records LibTorch's versions and determinism switches
// (DescribeTorch). The adapter of the store lives as long as the probes.
//
//   auto probes = dsdiag::probes::StartRankProbes(config, *store, &error);
//   auto probes = dsdiag::probes::StartRankProbes(config, *store);  // or throws
//
// Torch stays out of this header.
#pragma once

#include <memory>
#include <string>

#include "probes/rank_probes.h"

namespace c10d {
class Store;
}

namespace dsdiag::probes {

// `store` must outlive the probes. Null, with *error, as RankProbes::Start.
std::unique_ptr<RankProbes> StartRankProbes(RankProbesConfig config, c10d::Store& store,
                                            std::string* error);
// The same; throws std::runtime_error saying why instead of returning null.
std::unique_ptr<RankProbes> StartRankProbes(RankProbesConfig config, c10d::Store& store);

}  // namespace dsdiag::probes
