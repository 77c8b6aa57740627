// The collective a watchdog's message names: the `error` record a rank's watchdog writes
// beside its flight dump says which collective it gave up on, in prose. The hang and
// rank-died analyzers read it when the record has no "pg"/"seq" fields of its own.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dsdiag::analyzers {

// The collective a watchdog message names — the `error` record the watchdog writes beside
// its dump — as the probes' watchdog writes it:
//   "collective pg 0 seq 15 (allreduce, grad-bucket-0) pending for 61.0 s, past ..."
// (op and tag are optional: other writers say "allreduce pg 0 seq 15 (grad-bucket-0)").
// The first "pg <int> seq <int>" in the text; nullopt when there is none.
struct NamedCollective {
  int pg = 0;
  int64_t seq = 0;
  std::string op;
  std::string tag;
};
std::optional<NamedCollective> ParseNamedCollective(std::string_view text);

}  // namespace dsdiag::analyzers
