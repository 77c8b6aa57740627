#include "trace/collective.h"

namespace dsdiag::trace {

std::string_view CollectiveStateName(CollectiveState state) {
  switch (state) {
    case CollectiveState::kIssued:
      return "issued";
    case CollectiveState::kStarted:
      return "started";
    case CollectiveState::kCompleted:
      return "completed";
  }
  return "issued";
}

}  // namespace dsdiag::trace
