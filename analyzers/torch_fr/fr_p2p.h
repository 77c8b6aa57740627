// Point-to-point ops of Flight Recorder dumps, paired across ranks: each send with the recv
// it meets, and the two rules over the pairs (collective-mismatch, hang).
//
// torch's NCCL backend records `nccl:send 0->1` on the sender and `nccl:recv 1<-0` on the
// receiver (self, then peer; group ranks, mapped to global ones by the group's sorted
// members), `is_p2p` True and `p2p_seq_id` counting the rank's p2p ops in the group. That
// counter is per rank, not per pair: a rank that talks to two peers numbers its ops to both
// in one sequence, so the seq does not line up across ranks. A send is paired instead with
// the recv of the same rank in the order of its channel — (group, src, dst): the k-th send
// from a to b meets the k-th recv on b from a, as NCCL and Gloo match them.
//
//   collective-mismatch  a pair whose elements or dtypes differ. The odd side is the one
//                        whose signature the group's other pairs never showed while the
//                        other's they did (`basis` "history"); else both sides are named
//                        (`basis` "none"), as dsdiag's own p2p analysis does. One finding
//                        per channel, the first such pair; the later ones are counted.
//   hang                 a rank waiting (not done) in a recv (or a send) whose peer never
//                        posted the matching op: the peer is the culprit, named with the
//                        line it was at (the op it waits in elsewhere, else its last op).
//
// A channel whose two dumps do not both hold its whole history (a ring buffer that wrapped:
// the first record_id above 0) cannot be paired from the start and is left out; so are ops
// whose peers cannot be mapped to global ranks (no member list for a sub-group).
#pragma once

#include <vector>

#include "analyzers/framework/finding.h"
#include "analyzers/torch_fr/fr_groups.h"

namespace dsdiag::analyzers::torch_fr {

void FindP2pFindings(const FrRun& run, const std::vector<FrGroup>& groups,
                     std::vector<Finding>* findings);

}  // namespace dsdiag::analyzers::torch_fr
