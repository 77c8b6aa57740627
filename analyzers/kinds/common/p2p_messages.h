// P2PMessages: collective-mismatch's rule for point-to-point messages — each send against
// the recv it meets (records/p2p_record.h). The backend pairs rank i's k-th send to j on a
// group (with one tag) with j's k-th recv from i there, whatever either side's size: Gloo
// hands j the bytes i sent, aborting j when they are more than its buffer ("20 vs 16") and
// leaving the tail of j's tensor as it was when they are fewer — silent, both ranks go on.
// Only both sides' records say so, and which pair.
//
// Input: `p2p` records (completed messages) as the ranks deliver them, and the p2p entries of
// the flight dumps that the dumping rank's trace has no record of: the recv of a receiver
// Gloo aborted (pending), and the messages a rank completed in the step it died in (a
// request's record waits for the step's end; its dump entry is "completed"). A send and its
// recv are matched on (pg, sender, receiver, tag, seq) as soon as both are seen and forgotten
// then; at the end those dump entries stand for the sides no trace has. A recv from any source
// still pending (no peer yet) is not matched.
//
// Verdict, as for an all-to-all's per-peer sizes (peer_count_pairs.h): over the distinct
// directed pairs that disagree in a group, the rank in the most of them is named; a rank
// whose messages to two peers disagree is named alone, a single disagreeing pair names both
// sides (no majority: nothing says which side computed its size wrong). One finding per
// process group: its first disagreeing message in full, with how many more followed.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "analyzers/framework/finding.h"
#include "analyzers/kinds/common/peer_count_pairs.h"
#include "trace/flight_dump.h"
#include "trace/record.h"

namespace dsdiag::analyzers {

class P2PMessages {
 public:
  // The p2p entries of one rank's flight dump (held until Finish; those its trace records are
  // dropped then).
  void AddDump(int rank, const trace::FlightDump& dump);
  // One `p2p` record of `rank`.
  void Add(int rank, const trace::Record& record);
  // One finding per process group whose sends and recvs disagree.
  void Finish(std::vector<Finding>* findings);

 private:
  // Rank `from`'s seq-th message to rank `to` on group `pg` with the job's tag.
  struct Key {
    int64_t pg = 0, from = 0, to = 0, tag = 0, seq = 0;
    bool operator==(const Key& o) const {
      return pg == o.pg && from == o.from && to == o.to && tag == o.tag && seq == o.seq;
    }
  };
  struct KeyHash {
    size_t operator()(const Key& k) const;
  };
  // What one side recorded of a message.
  struct Side {
    std::string dtype;
    std::optional<int64_t> n;
    std::string call;  // send, isend, batch_isend_irecv, ...
    int64_t step = 0;
    bool from_dump = false;
  };
  // Both sides of a message so far: [0] the sender's, [1] the receiver's.
  struct Message {
    std::optional<Side> side[2];
  };
  struct Mismatch {
    Key key;
    Side send, recv;
  };
  struct PgMismatches {
    Mismatch first;
    int64_t count = 0;
    std::map<std::pair<int, int>, CountPair> pairs;  // distinct (from, to), their first
  };

  // Records one side; compares the message once both are known.
  void Put(const Key& key, bool receiver, Side side);
  void Compare(const Key& key, const Side& send, const Side& recv);
  Finding MakeFinding(const PgMismatches& m) const;

  // A dump entry: one side of a message, and whether the dumping rank's trace recorded it.
  struct DumpSide {
    Key key;
    bool receiver = false;
    Side side;
    bool in_trace = false;
  };

  std::unordered_map<Key, Message, KeyHash> open_;  // messages one side of which is still unseen
  std::vector<DumpSide> dumped_;
  std::unordered_map<Key, size_t, KeyHash> dumped_at_[2];  // index in dumped_, by [receiver]
  std::map<int64_t, PgMismatches> by_pg_;
};

}  // namespace dsdiag::analyzers
