// The offset of this rank's wall clock to rank 0's, measured through the job's store, so
// that the analyzers, the timeline and the report put every rank on rank 0's clock (a host
// whose clock is off by 2 s must not look 2 s late).
//
// NTP's method over the store: rank r notes t1 and sets a ping key, rank 0 answers with its
// time t0, rank r notes t2 on receipt; offset = (t1 + t2) / 2 - t0, off by at most
// (t2 - t1) / 2. Of a few rounds the one with the smallest round trip wins. Rank 0 serves
// the ranks one after another; a rank waiting for its turn sees a long first round trip,
// which the best-of-rounds choice discards.
//
//   dsdiag::probes::ClockOffset start = dsdiag::probes::MeasureClockOffset(store, rank, world,
//   "start"); session->RecordClock("start", start.offset_ns, start.err_ns, start.rtt_ns);
//
// RankProbes (probes/rank_probes.h) does this at Start and Finish.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>

#include "probes/key_value_store.h"

namespace dsdiag::probes {

struct ClockOffset {
  int64_t offset_ns = 0;  // this rank's wall clock minus rank 0's
  int64_t err_ns = -1;    // half the best round trip; -1 when not measured
  int64_t rtt_ns = -1;
};

struct ClockOffsetOptions {
  int rounds = 6;
  // The wall clock read (CLOCK_REALTIME ns). A loop that shifts its own clock (the
  // trainer's clock-skew fault) passes its reading here, so that the offset measures it.
  std::function<int64_t()> now;  // empty: trace::WallNs
};

// Collective over the store: every rank calls it with the same `when` ("start", "end"; a
// key prefix, so each label is used once per run). Rank 0 returns {0, 0, 0} after serving
// every rank and seeing each one done (so that it may close the store once this returns);
// a one-rank job returns {0, 0, 0} at once. Throws what the store throws.
ClockOffset MeasureClockOffset(KeyValueStore& store, int rank, int world_size,
                               std::string_view when, const ClockOffsetOptions& options = {});

}  // namespace dsdiag::probes
