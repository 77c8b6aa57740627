#include "trace/peer_loss.h"

namespace dsdiag::trace {

bool LooksLikePeerLoss(std::string_view message) {
  for (std::string_view sign :
       {"Connection closed by peer", "Connection reset by peer", "Broken pipe",
        "remote process exited or there was a network error", "lost the rendezvous store"}) {
    if (message.find(sign) != std::string_view::npos) return true;
  }
  return false;
}

}  // namespace dsdiag::trace
