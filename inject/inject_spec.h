// InjectSpec: one `--inject KIND[:key=value[,key=value...]]` fault (docs/contract.md), parsed and
// checked. Torch-free: the trainer applies the faults, `dsdiag synth` imitates them in
// synthetic traces. The probes never see this.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace dsdiag::inject {

enum class Kind {
  kUnusedParam,
  kGradDesync,
  kNoBroadcast,
  kRngCollision,
  kSamplerSeed,
  kNoSetEpoch,
  kSlowLoader,
  kOverflow,
  kScalerDesync,
  kClipBeforeUnscale,
  kCkptAllRanks,
  kCkptStale,
  kStraggler,
  kClockSkew,
  kConfigMismatch,
  kCollectiveMismatch,
  kHang,
  kCrash,
};

struct InjectSpec {
  Kind kind;
  std::optional<int> rank;
  std::optional<int64_t> step;
  std::optional<int64_t> ms;
  std::string text;  // as given, for messages and the trace config
};

// A bad spec: the message says what was wrong and what was expected, e.g.
// "--inject straggler:rank=9,ms=50: rank 9 is out of range for 4 ranks (0..3)".
class InjectSpecError : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

// `world_size` < 0 skips the rank range check (not yet known).
InjectSpec ParseInjectSpec(std::string_view text, int world_size);
std::string_view KindName(Kind kind);
// Whether only `dsdiag synth` imitates `kind` (a fault whose footprint is the traces' headers,
// not anything the trainer computes); `dsdiag train` refuses it.
bool SynthOnly(Kind kind);
// One line per kind the trainer injects: name, keys, description (for `dsdiag train --help`).
std::string DescribeKinds();

// All the faults of one run.
class InjectPlan {
 public:
  InjectPlan() = default;
  explicit InjectPlan(std::vector<InjectSpec> specs) : specs_(std::move(specs)) {}
  static InjectPlan Parse(const std::vector<std::string>& texts, int world_size);

  const std::vector<InjectSpec>& specs() const { return specs_; }
  bool empty() const { return specs_.empty(); }
  // The first spec of `kind`, or null.
  const InjectSpec* Find(Kind kind) const;
  // The first spec of `kind` that targets `rank` (a spec without a rank key targets all).
  const InjectSpec* FindFor(Kind kind, int rank) const;
  // The specs as given, in order.
  std::vector<std::string> texts() const;

 private:
  std::vector<InjectSpec> specs_;
};

}  // namespace dsdiag::inject
