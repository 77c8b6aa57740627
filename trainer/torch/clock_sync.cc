#include "trainer/torch/clock_sync.h"

#include <limits>
#include <string>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <vector>

namespace dsdiag::trainer {
namespace {

std::vector<uint8_t> Encode(int64_t v) {
  const std::string s = std::to_string(v);
  return std::vector<uint8_t>(s.begin(), s.end());
}

int64_t Decode(const std::vector<uint8_t>& bytes) {
  return std::stoll(std::string(bytes.begin(), bytes.end()));
}

std::string Key(std::string_view when, int rank, int round, const char* leg) {
  return "dsdiag/clock/" + std::string(when) + "/" + std::to_string(rank) + "/" +
         std::to_string(round) + "/" + leg;
}

}  // namespace

ClockOffset MeasureClockOffset(c10d::Store& store, int rank, int world_size, const WallClock& clock,
                               std::string_view when, int rounds) {
  if (rank == 0) {
    // Serve the ranks one after the other; a rank waiting its turn sees a long first
    // round trip, which the best-of-rounds choice discards.
    for (int peer = 1; peer < world_size; ++peer) {
      for (int round = 0; round < rounds; ++round) {
        store.wait({Key(when, peer, round, "ping")});
        store.set(Key(when, peer, round, "pong"), Encode(clock.Now()));
      }
    }
    return {0, 0, 0};
  }
  ClockOffset best;
  best.rtt_ns = std::numeric_limits<int64_t>::max();
  for (int round = 0; round < rounds; ++round) {
    const int64_t t1 = clock.Now();
    store.set(Key(when, rank, round, "ping"), Encode(t1));
    const int64_t t0 = Decode(store.get(Key(when, rank, round, "pong")));
    const int64_t t2 = clock.Now();
    if (t2 - t1 < best.rtt_ns) {
      best.rtt_ns = t2 - t1;
      best.err_ns = (t2 - t1) / 2;
      best.offset_ns = t1 + (t2 - t1) / 2 - t0;
    }
  }
  return best;
}

}  // namespace dsdiag::trainer
