// What part of a run a timeline shows: `--steps A:B` and `--ranks LIST`.
//
// Both are kept as ranges, never expanded, so that `--ranks 0-100000` costs nothing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dsdiag::timeline {

// An inclusive range of steps; either end may be open.
struct StepRange {
  std::optional<int64_t> first;
  std::optional<int64_t> last;
  bool Contains(int64_t step) const {
    return (!first || step >= *first) && (!last || step <= *last);
  }
  bool unbounded() const { return !first && !last; }
};

// "A:B", "A:", ":B", ":" or "N" (one step). Returns nullopt and sets *error when malformed
// or when A > B.
std::optional<StepRange> ParseStepRange(std::string_view text, std::string* error);

// A set of ranks as sorted, disjoint inclusive ranges.
class RankSet {
 public:
  RankSet() = default;  // empty
  static RankSet All();
  bool Contains(int rank) const;
  bool all() const { return all_; }
  // "0-3,7" (the text it was parsed from, normalised).
  std::string ToString() const;

  // "0-3,7", "5", "0-3,2-9" (overlaps merge). Returns nullopt and sets *error when
  // malformed, negative, or a range runs backwards.
  static std::optional<RankSet> Parse(std::string_view text, std::string* error);

 private:
  bool all_ = false;
  std::vector<std::pair<int, int>> ranges_;
};

}  // namespace dsdiag::timeline

namespace dsdiag::timeline {

struct Selection {
  StepRange steps;
  RankSet ranks = RankSet::All();
};

}  // namespace dsdiag::timeline
