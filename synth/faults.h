// Faults: the --inject specs a synthetic run imitates, turned into the few facts the time
// model and the renderer need (who is slow, whose clock is off, who stops where).
//
// synth imitates faults whose footprint is timing or control flow (straggler, clock-skew,
// crash, hang, unused-param, collective-mismatch), the two whose footprint is which
// ranks' fingerprints agree (grad-desync, no-broadcast): synthetic hashes need only say
// who equals whom, and one whose footprint is a rank's header (config-mismatch, synth's
// own: a rank launched with other settings). The rest (RNG, samplers, scalers, checkpoints...) show
// up in values that only the real trainer produces; asking for one is an error that points at
// `dsdiag train`.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "inject/inject_spec.h"

namespace dsdiag::synth {

// A request synth cannot honour (unsupported kind, step past the end...): bad usage.
class SynthSpecError : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Where one rank stops for good.
struct Stop {
  enum class Kind { kCrash, kHang };
  Kind kind = Kind::kCrash;
  int rank = 0;
  int64_t step = 0;
};

class Faults {
 public:
  Faults() = default;
  // Throws SynthSpecError for kinds synth cannot imitate, a step at or past `steps`, a
  // missing rank key, or more than one crash/hang.
  static Faults FromPlan(const inject::InjectPlan& plan, int ranks, int64_t steps);

  // Extra backward time of `rank` each step, ns (straggler).
  int64_t StragglerNs(int rank) const;
  // How far `rank`'s wall clock runs ahead, ns (clock-skew).
  int64_t SkewNs(int rank) const;
  bool UnusedParams(int rank) const;
  // Whether `rank` issues a mismatched collective in `step` (collective-mismatch).
  bool CollectiveMismatch(int rank, int64_t step) const;
  // Whether `rank`'s gradient is altered after the sync of `step` (grad-desync).
  bool GradDesync(int rank, int64_t step) const;
  // Whether `rank`'s replica has drifted by the end of `step`: a grad-desync at or before it.
  bool Drifted(int rank, int64_t step) const;
  bool NoBroadcast() const { return no_broadcast_; }
  // Whether `rank` was launched with other settings (config-mismatch).
  bool ConfigMismatch(int rank) const;
  const std::optional<Stop>& stop() const { return stop_; }
  // The specs as given, space-separated, for the header's config.
  const std::string& text() const { return text_; }

 private:
  struct RankAmount {
    int rank;
    int64_t ns;
  };
  static int64_t Sum(const std::vector<RankAmount>& v, int rank);

  std::vector<RankAmount> straggler_;
  std::vector<RankAmount> skew_;
  std::vector<int> unused_param_ranks_;
  std::vector<int> config_mismatch_ranks_;
  std::vector<std::pair<int, int64_t>> mismatch_;  // (rank, step)
  std::vector<std::pair<int, int64_t>> desync_;    // (rank, step)
  bool no_broadcast_ = false;
  std::optional<Stop> stop_;
  std::string text_;
};

}  // namespace dsdiag::synth
