// Links dsdiag::probes through add_subdirectory.
#include "probes/rank_probes.h"

int main() {
  return dsdiag::probes::RankProbesConfig::FromEnvironment().environment_error.empty() ? 0 : 1;
}
