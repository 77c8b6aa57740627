// PhaseNames: the phase names a run's `step` records use, kept once for the whole analysis.
// Every rank keeps a sum per phase, four kinds of them (wall, CPU, run queue, device); with
// the name spelled in each, a rank's sums took a kilobyte at 131,072 ranks (issue 35). The
// sums hold a PhaseName instead: a view of the one copy here, which lives as long as the
// analyzer that interned it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

namespace dsdiag::analyzers::straggler {

// A name interned in a PhaseNames; only PhaseNames makes one, so a sum's name never views a
// record's buffer.
class PhaseName {
 public:
  std::string_view view() const { return view_; }
  friend bool operator==(PhaseName a, std::string_view b) { return a.view_ == b; }

 private:
  friend class PhaseNames;
  explicit PhaseName(std::string_view view) : view_(view) {}
  std::string_view view_;
};

class PhaseNames {
 public:
  PhaseName Intern(std::string_view name) {
    auto it = names_.find(std::string(name));
    if (it == names_.end()) it = names_.emplace(name).first;  // nodes: the string stays put
    return PhaseName(*it);
  }
  size_t size() const { return names_.size(); }

 private:
  std::unordered_set<std::string> names_;
};

// A rank's sums per phase, in order of first sight: a handful, searched linearly.
using PhaseSums = std::vector<std::pair<PhaseName, int64_t>>;

}  // namespace dsdiag::analyzers::straggler
