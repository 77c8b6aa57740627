#include "trace/peer_loss.h"

#include <algorithm>
#include <cctype>
#include <string>

namespace dsdiag::trace {

bool LooksLikePeerLoss(std::string_view message) {
  // Case aside: writers differ ("Connection closed by peer", "connection closed by peer").
  std::string lower(message);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (std::string_view sign :
       {"connection closed by peer", "connection reset by peer", "broken pipe",
        "remote process exited or there was a network error", "lost the rendezvous store"}) {
    if (lower.find(sign) != std::string::npos) return true;
  }
  return false;
}

}  // namespace dsdiag::trace
