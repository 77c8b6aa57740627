// CollectiveWaits: per rank and step, how long the rank waited in collectives for its
// peers, and how late it arrived — computed as the ranks stream by in lockstep, holding
// only the collectives still in flight.
//
// For one collective (pg, seq) entered by rank r at time e_r (rank 0's clock, see
// trace/rank_clock.h):
//   wait_r  = last - e_r    (clamped to [0, dur_r]): it cannot complete before the last
//                            rank enters, so r sat there that long — timeline's `wait`;
//   delay_r = e_r - first  (clamped at 0): how long the earliest rank had been waiting
//                            when r arrived — what r cost the others.
// Both are summed over the collectives of a step. A straggler waits for nobody (its wait is
// ~0, everyone else's is high) and arrives late (its delay is high, everyone else's ~0):
// the delay survives grouping ranks into rows with `max`, the wait does not.
//
// A collective is settled as soon as every analysed rank has entered it; at the end of step
// s (OnStepDone) the collectives of earlier steps are settled with whoever entered (a rank
// died, or the group is a subset), and the sums of earlier steps are handed out. So in
// lockstep memory is about two steps of collectives, and with step windows of K steps
// (step_driver.h) about K + 1. A window of the whole run (DSDIAG_STEP_WINDOW=all, or more
// compressed traces than open files) settles nothing until the end: past kMaxHeldEnters the
// waits are given up (`abandoned`), and the report says so.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <unordered_map>
#include <vector>

namespace dsdiag::report {

class CollectiveWaits {
 public:
  static constexpr size_t kMaxHeldEnters = size_t{1} << 20;

  // rank_index: the rank's position among the analysed ranks (0..ranks-1); wait and delay
  // in ns, summed over the step's collectives.
  using Sink = std::function<void(int rank_index, int64_t step, int64_t wait_ns, int64_t delay_ns)>;

  explicit CollectiveWaits(int ranks, size_t max_held = kMaxHeldEnters);

  void Add(int rank_index, int64_t step, int64_t pg, int64_t seq, int64_t enter_ns, int64_t dur_ns);
  // Every rank has delivered `step`: settles what is older and hands out its sums.
  void StepDone(int64_t step, const Sink& sink);
  // Settles and hands out everything.
  void Finish(const Sink& sink);

  bool abandoned() const { return abandoned_; }
  // Enters of unsettled collectives plus slots of step sums not yet handed out.
  size_t held() const { return held_; }
  // Per rank index: collectives it took part in with at least one peer, and in how many of
  // those it was the last to enter.
  const std::vector<int64_t>& collectives() const { return collectives_; }
  const std::vector<int64_t>& entered_last() const { return entered_last_; }

 private:
  struct Enter {
    int rank_index;
    int64_t enter_ns;
    int64_t dur_ns;
  };
  struct Pending {
    int64_t step = 0;
    std::vector<Enter> enters;
  };
  struct StepSums {
    std::vector<int64_t> wait;  // -1: the rank entered no collective of the step
    std::vector<int64_t> delay;
  };
  struct KeyHash {
    size_t operator()(const std::pair<int64_t, int64_t>& k) const {
      return std::hash<int64_t>()(k.first * 1000003 + k.second);
    }
  };

  void Settle(const Pending& c);
  StepSums& SumsOf(int64_t step);
  void HandOut(int64_t before_step, const Sink& sink);
  void Abandon();

  int ranks_;
  size_t max_held_;
  size_t held_ = 0;  // enters pending plus step-sum slots
  bool abandoned_ = false;
  std::unordered_map<std::pair<int64_t, int64_t>, Pending, KeyHash> pending_;
  std::map<int64_t, StepSums> sums_;
  std::vector<int64_t> collectives_;
  std::vector<int64_t> entered_last_;
};

}  // namespace dsdiag::report
