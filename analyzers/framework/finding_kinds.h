// The finding kinds of docs/contract.md, spelled once. docs/findings.md documents each; an
// analyzer names the kinds it emits with these constants so that a typo cannot invent a kind.
#pragma once

#include <string_view>

namespace dsdiag::analyzers::kind {

inline constexpr std::string_view kMissingGrad = "missing-grad";
inline constexpr std::string_view kGradDesync = "grad-desync";
inline constexpr std::string_view kReplicaDivergence = "replica-divergence";
inline constexpr std::string_view kInitDivergence = "init-divergence";
inline constexpr std::string_view kRngCollision = "rng-collision";
inline constexpr std::string_view kShardOverlap = "shard-overlap";
inline constexpr std::string_view kInputDivergence = "input-divergence";
inline constexpr std::string_view kEpochOrderRepeat = "epoch-order-repeat";
inline constexpr std::string_view kLoaderStarvation = "loader-starvation";
inline constexpr std::string_view kScalerOverflow = "scaler-overflow";
inline constexpr std::string_view kScalerDesync = "scaler-desync";
inline constexpr std::string_view kClipBeforeUnscale = "clip-before-unscale";
inline constexpr std::string_view kCheckpointRace = "checkpoint-race";
inline constexpr std::string_view kCheckpointMismatch = "checkpoint-mismatch";
inline constexpr std::string_view kStraggler = "straggler";
inline constexpr std::string_view kCollectiveMismatch = "collective-mismatch";
inline constexpr std::string_view kHang = "hang";
inline constexpr std::string_view kRankDied = "rank-died";
inline constexpr std::string_view kConfigMismatch = "config-mismatch";
inline constexpr std::string_view kTraceCorrupt = "trace-corrupt";

}  // namespace dsdiag::analyzers::kind
