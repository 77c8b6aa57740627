// The classic errors a rank dies of, recognised from the exception's message (the `end`
// record's detail, `Type: message`): the cause in a few words and the fix, which rank-died
// puts in its hint instead of the generic one. Torch-free: the messages are matched as
// PyTorch 1.13 and 2.x word them.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace dsdiag::analyzers::rank_died {

struct KnownError {
  std::string cause;  // evidence.known_cause: "ddp-module-prefix", "map-location"
  std::string hint;
};

std::optional<KnownError> RecogniseKnownError(std::string_view message);

}  // namespace dsdiag::analyzers::rank_died
