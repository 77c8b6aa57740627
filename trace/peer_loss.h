// The error texts that mean "a peer went away" rather than "this rank failed": what Gloo,
// NCCL and c10d's store raise on a rank whose peer died or was stopped. A rank that fails
// with one of them is a follow-on of another rank's failure (the trainer ends it with
// reason "peer-failure"; rank-died reads an `error` end carrying one the same way).
#pragma once

#include <string_view>

namespace dsdiag::trace {

// "Connection closed by peer", "Connection reset by peer", "Broken pipe" (Gloo, the
// store), NCCL's "remote process exited or there was a network error", the trainer's
// "lost the rendezvous store"; case aside.
bool LooksLikePeerLoss(std::string_view message);

}  // namespace dsdiag::trace
