#include "probes/torch/rank_probes_torch.h"

#include <stdexcept>
#include <utility>

#include "probes/torch/c10d_store.h"
#include "probes/torch/torch_info.h"

namespace dsdiag::probes {

std::unique_ptr<RankProbes> StartRankProbes(RankProbesConfig config, c10d::Store& store,
                                            std::string* error) {
  DescribeTorch(&config.header);
  return RankProbes::Start(std::move(config), std::make_unique<C10dStore>(store), error);
}

std::unique_ptr<RankProbes> StartRankProbes(RankProbesConfig config, c10d::Store& store) {
  std::string error;
  std::unique_ptr<RankProbes> probes = StartRankProbes(std::move(config), store, &error);
  if (!probes) throw std::runtime_error("dsdiag probes: " + error);
  return probes;
}

}  // namespace dsdiag::probes
