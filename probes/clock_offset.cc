#include "probes/clock_offset.h"

#include <limits>
#include <string>

#include "trace/clock.h"

namespace dsdiag::probes {
namespace {

std::string Key(std::string_view when, int rank, int round, const char* leg) {
  return "dsdiag/clock/" + std::string(when) + "/" + std::to_string(rank) + "/" +
         std::to_string(round) + "/" + leg;
}

std::string DoneKey(std::string_view when, int rank) {
  return "dsdiag/clock/" + std::string(when) + "/" + std::to_string(rank) + "/done";
}

}  // namespace

ClockOffset MeasureClockOffset(KeyValueStore& store, int rank, int world_size,
                               std::string_view when, const ClockOffsetOptions& options) {
  const std::function<int64_t()> now = options.now ? options.now : [] { return trace::WallNs(); };
  const int rounds = options.rounds > 0 ? options.rounds : 1;
  if (rank == 0) {
    for (int peer = 1; peer < world_size; ++peer) {
      for (int round = 0; round < rounds; ++round) {
        store.Get(Key(when, peer, round, "ping"));
        store.Set(Key(when, peer, round, "pong"), std::to_string(now()));
      }
    }
    // A peer may still be reading its last pong: wait until each says it has.
    for (int peer = 1; peer < world_size; ++peer) store.Get(DoneKey(when, peer));
    return {0, 0, 0};
  }
  ClockOffset best;
  best.rtt_ns = std::numeric_limits<int64_t>::max();
  for (int round = 0; round < rounds; ++round) {
    const int64_t t1 = now();
    store.Set(Key(when, rank, round, "ping"), std::to_string(t1));
    const int64_t t0 = std::stoll(store.Get(Key(when, rank, round, "pong")));
    const int64_t t2 = now();
    if (t2 - t1 < best.rtt_ns) {
      best.rtt_ns = t2 - t1;
      best.err_ns = (t2 - t1) / 2;
      best.offset_ns = t1 + (t2 - t1) / 2 - t0;
    }
  }
  store.Set(DoneKey(when, rank), "1");
  return best;
}

}  // namespace dsdiag::probes
