// PeerCounts: what one rank of a collective with per-peer sizes (all_to_all_single with split
// sizes, all_to_all's tensor lists) sends to and receives from each rank of its group, in
// elements. The backend pairs rank i's send[j] with rank j's recv[i]; when they differ the
// receiver gets too few or too many bytes (Gloo aborts it: "160 vs 128"), and only the counts
// of both sides say which rank computed its sizes wrong.
//
// `peers` are the group's ranks as global ranks, in group-rank order; empty means the group
// is the default one (group rank = global rank). `send` and `recv` have one count per peer.
// Carried by `coll` records (records/coll_record.h) and flight-dump entries (flight_dump.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace dsdiag::trace {

struct PeerCounts {
  std::vector<int64_t> peers;  // global rank of each group rank; empty: the default group
  std::vector<int64_t> send;   // elements sent to each group rank
  std::vector<int64_t> recv;   // elements received from each group rank

  bool empty() const { return send.empty() && recv.empty(); }
  // The global rank of group rank `i`.
  int64_t GlobalRank(size_t i) const { return peers.empty() ? static_cast<int64_t>(i) : peers[i]; }
  // Well formed: send and recv given, as many of each as there are peers (when listed).
  bool consistent() const {
    return !send.empty() && send.size() == recv.size() &&
           (peers.empty() || peers.size() == send.size());
  }
  bool operator==(const PeerCounts& o) const {
    return peers == o.peers && send == o.send && recv == o.recv;
  }
};

}  // namespace dsdiag::trace
