#include "trace/run_id.h"

#include <cstdio>
#include <ctime>
#include <random>

#include "trace/clock.h"

namespace dsdiag::trace {

std::string MakeRunId(int64_t wall_ns) {
  if (wall_ns < 0) wall_ns = WallNs();
  const std::time_t now = static_cast<std::time_t>(wall_ns / 1000000000);
  std::tm local{};
  localtime_r(&now, &local);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &local);
  std::random_device random;
  char suffix[16];
  std::snprintf(suffix, sizeof suffix, "%08x", static_cast<unsigned>(random()));
  return std::string(stamp) + "-" + suffix;
}

}  // namespace dsdiag::trace
