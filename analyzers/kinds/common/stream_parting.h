// StreamParting: where the ranks' collective streams of one process group parted — the first
// (pg, seq) at which their call sites differ (common/call_sites.h), even where op, dtype and
// size agree: a rank that skipped a collective of the same size as the next one pairs every
// later collective with the others' wrong ones, and nothing fails until the end.
//
// Fed every collective in (pg, seq) order with each rank's site and step. A parting counts
// when the streams stay parted (a later collective differs too) or the ranks were in different
// steps there; one collective issued from two lines that realign at once (an `if rank == 0`
// around a broadcast's source) is no parting. Who parted is decided from the evidence:
//   - a majority of ranks at one site: the others parted;
//   - no majority (two ranks, 2 against 2): the history of the group before the parting. A rank
//     whose site never followed the last agreed site at an earlier collective went off the
//     group's pattern; if that does not single a side out, the ranks in a later step skipped
//     one; otherwise nobody is named alone (every rank of the split, majority false).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

namespace dsdiag::analyzers {

class StreamParting {
 public:
  struct Seen {
    int rank = 0;
    int site = 0;  // RunSites' number; 0: unknown
    int64_t step = 0;
    int signature = 0;  // the analyzer's id for op, dtype, size
  };
  struct Side {
    int site = 0;
    int64_t step = 0;  // the lowest step of its ranks there
    int signature = 0;
    std::vector<int> ranks;  // ascending
  };
  enum class How { kSkipped, kAdded, kUndecided };
  struct Parting {
    int pg = 0;
    int64_t seq = 0;
    std::vector<Side> sides;  // the reference (the side that kept the pattern) first
    std::vector<int> named;   // who parted; every rank of the split when undecided
    bool majority = true;     // named by a majority of ranks (false: by history, or nobody)
    How how = How::kUndecided;
    int64_t later = 0;  // later collectives of the group whose sites differ too
  };

  // One collective of group `pg`, each rank's record once (by rank).
  void Note(int pg, int64_t seq, const std::vector<Seen>& seen);
  // The group's parting, once it counts.
  std::optional<Parting> Of(int pg) const;
  std::vector<int> groups() const;

 private:
  struct Group {
    int last_agreed = 0;                    // the site of the last collective all agreed on
    std::set<std::pair<int, int>> follows;  // (site, the next agreed site), as seen
    std::set<int> known;                    // every agreed site
    std::optional<Parting> parting;
    bool steps_differ = false;
  };
  void Judge(Group* g, Parting* p) const;
  std::map<int, Group> groups_;
};

}  // namespace dsdiag::analyzers
