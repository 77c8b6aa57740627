// CollectiveIndex: for each collective (pg, seq), when the last rank entered it, on rank 0's
// clock — what a timeline needs to say how long each rank waited for its peers.
//
// A collective cannot complete before every rank has entered it, so a rank that entered at
// t waited (last enter - t) for the others; the last rank to enter is the one they waited
// for. Built in a first pass over every rank (the `coll` records of the selected steps only),
// it holds one 16-byte entry per collective: O(#collectives), never O(#ranks x
// #collectives). About 16 MB for 10^6 collectives.
//
// Storage: sequence numbers of a process group are dense from wherever the selection
// starts, so each group keeps a vector indexed by seq - base, grown a chunk at a time as
// the seqs arrive; a seq far beyond its end or below base (a resumed run, a corrupt record)
// goes to a hash map instead of growing the vector, and moves into the vector if it grows
// over it later.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

namespace dsdiag::timeline {

class CollectiveIndex {
 public:
  struct Entry {
    int64_t last_enter = kNone;  // latest enter among the ranks, rank 0's clock, ns
    int32_t last_rank = -1;      // the rank that entered then
    int32_t ranks = 0;           // how many ranks recorded the collective
  };
  static constexpr int64_t kNone = INT64_MIN;
  // The dense vector grows by at most this many entries past its end at a time.
  static constexpr uint64_t kGrowChunk = 4096;

  void Add(int64_t pg, int64_t seq, int64_t enter_rank0_ns, int rank);
  // Null when no rank recorded (pg, seq).
  const Entry* Find(int64_t pg, int64_t seq) const;
  int64_t size() const { return size_; }

 private:
  struct Group {
    int64_t base = 0;
    std::vector<Entry> dense;                   // seq - base -> entry
    std::unordered_map<int64_t, Entry> sparse;  // seqs outside the window
  };
  Entry* Slot(int64_t pg, int64_t seq);
  static void Grow(Group* g, uint64_t size);

  std::unordered_map<int64_t, Group> groups_;
  int64_t size_ = 0;
};

}  // namespace dsdiag::timeline
