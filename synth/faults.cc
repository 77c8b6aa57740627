#include "synth/faults.h"

#include <algorithm>

namespace dsdiag::synth {
namespace {

[[noreturn]] void Unsupported(const inject::InjectSpec& spec) {
  throw SynthSpecError("synth cannot imitate --inject " + spec.text +
                       " (use the trainer: dsdiag train --inject " + spec.text + ")");
}

int RequireRank(const inject::InjectSpec& spec) {
  if (!spec.rank) throw SynthSpecError("--inject " + spec.text + ": synth needs rank=R here");
  return *spec.rank;
}

int64_t RequireStep(const inject::InjectSpec& spec, int64_t steps) {
  if (!spec.step) throw SynthSpecError("--inject " + spec.text + ": synth needs step=S here");
  if (*spec.step >= steps) {
    throw SynthSpecError("--inject " + spec.text + ": step " + std::to_string(*spec.step) +
                         " is past the run's last step (--steps " + std::to_string(steps) +
                         " runs steps 0.." + std::to_string(steps - 1) + ")");
  }
  return *spec.step;
}

}  // namespace

Faults Faults::FromPlan(const inject::InjectPlan& plan, int ranks, int64_t steps) {
  Faults f;
  for (const inject::InjectSpec& spec : plan.specs()) {
    if (spec.rank && *spec.rank >= ranks) {
      throw SynthSpecError("--inject " + spec.text + ": rank " + std::to_string(*spec.rank) +
                           " is out of range for " + std::to_string(ranks) + " ranks");
    }
    switch (spec.kind) {
      case inject::Kind::kStraggler:
        f.straggler_.push_back({RequireRank(spec), spec.ms.value_or(0) * 1000000});
        break;
      case inject::Kind::kClockSkew:
        f.skew_.push_back({RequireRank(spec), spec.ms.value_or(0) * 1000000});
        break;
      case inject::Kind::kUnusedParam:
        f.unused_param_ranks_.push_back(RequireRank(spec));
        break;
      case inject::Kind::kConfigMismatch:
        f.config_mismatch_ranks_.push_back(RequireRank(spec));
        break;
      case inject::Kind::kCollectiveMismatch:
        f.mismatch_.emplace_back(RequireRank(spec), RequireStep(spec, steps));
        break;
      case inject::Kind::kGradDesync:
        f.desync_.emplace_back(RequireRank(spec), RequireStep(spec, steps));
        break;
      case inject::Kind::kNoBroadcast:
        f.no_broadcast_ = true;
        break;
      case inject::Kind::kCrash:
      case inject::Kind::kHang: {
        if (f.stop_) {
          throw SynthSpecError("--inject " + spec.text +
                               ": synth imitates one crash or hang per run");
        }
        const Stop::Kind kind =
            spec.kind == inject::Kind::kCrash ? Stop::Kind::kCrash : Stop::Kind::kHang;
        f.stop_ = Stop{kind, RequireRank(spec), RequireStep(spec, steps)};
        break;
      }
      default:
        Unsupported(spec);
    }
    if (!f.text_.empty()) f.text_ += ' ';
    f.text_ += spec.text;
  }
  return f;
}

int64_t Faults::Sum(const std::vector<RankAmount>& v, int rank) {
  int64_t ns = 0;
  for (const RankAmount& a : v)
    if (a.rank == rank) ns += a.ns;
  return ns;
}

int64_t Faults::StragglerNs(int rank) const { return Sum(straggler_, rank); }
int64_t Faults::SkewNs(int rank) const { return Sum(skew_, rank); }

bool Faults::UnusedParams(int rank) const {
  return std::find(unused_param_ranks_.begin(), unused_param_ranks_.end(), rank) !=
         unused_param_ranks_.end();
}

bool Faults::ConfigMismatch(int rank) const {
  return std::find(config_mismatch_ranks_.begin(), config_mismatch_ranks_.end(), rank) !=
         config_mismatch_ranks_.end();
}

bool Faults::CollectiveMismatch(int rank, int64_t step) const {
  return std::find(mismatch_.begin(), mismatch_.end(), std::make_pair(rank, step)) !=
         mismatch_.end();
}

bool Faults::GradDesync(int rank, int64_t step) const {
  return std::find(desync_.begin(), desync_.end(), std::make_pair(rank, step)) != desync_.end();
}

bool Faults::Drifted(int rank, int64_t step) const {
  for (const auto& [r, s] : desync_)
    if (r == rank && s <= step) return true;
  return false;
}

}  // namespace dsdiag::synth
