// FrRun: a directory of PyTorch Flight Recorder dumps (one `<prefix><rank>` file per rank,
// trace/torch_fr/) as one job: each rank's entries in a compact form, the job's world size,
// the ranks that left no dump and the files that could not be used. What a job that ran
// without dsdiag leaves behind; `dsdiag compare` analyses it (fr_compare.h).
//
// Compact because a job of 1,024 ranks keeps 2,000 entries each (torch's default ring):
// a dump is parsed, reduced to FrEntry — numbers and indices into one table of the strings
// the analysis shows (op names, sizes, dtypes, the issuing Python line), each kept once —
// and dropped before the next is read. About 64 bytes an entry, whatever its frames held.
//
// The world size is the largest rank list a dump's `pg_config` gives (the default group's
// members), else one more than the highest rank with a file: a missing rank past every file
// cannot be seen, and the summary says how the size was found. A file that is no dump, or
// cannot be read, is a LocatedIssue (file, byte or line, what was expected), never a crash.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "trace/located_issue.h"
#include "trace/torch_fr/torch_fr_dump.h"

namespace dsdiag::analyzers::torch_fr {

// Strings kept once for the whole run; entries refer to them by index.
class StringTable {
 public:
  int Intern(std::string_view s);
  const std::string& operator[](int index) const { return strings_[index]; }

 private:
  std::vector<std::string> strings_;
  std::unordered_map<std::string, int> index_;
};

// A process group of the job, by its job-wide name (and whether it is its p2p sequence).
struct FrGroupName {
  // The entries' process_group name: "0", "1", ... or a hash. Layouts before format 2.0
  // (torch 2.2, 2.3) have no process_group: there it is the pg_id, which those versions
  // numbered alike on every rank (groups are created in the same order everywhere).
  std::string name;
  std::string desc;  // "default_pg", "undefined", or the job's group_desc
  bool p2p = false;
  bool is_default = false;
  // The members (global ranks, sorted) the first dump whose pg_config names the group with
  // a non-empty list gives: a point-to-point op's peers are group ranks. Empty when no dump
  // says (Gloo's pg_config cannot be relied on).
  std::vector<int64_t> ranks;
};

// One entry of one rank's dump, as the analysis uses it.
struct FrEntry {
  static constexpr int64_t kNoTime = INT64_MIN;
  // collective_seq_id, or p2p_seq_id for p2p ops; seq_id before format 2.0.
  int64_t seq = 0;
  int64_t numel = 0;               // elements of the input tensors
  int64_t created_ns = kNoTime;    // wall clock
  int64_t completed_ns = kNoTime;  // time_discovered_completed_ns
  int32_t group = 0;               // FrRun::groups
  int32_t op = 0;                  // strings: "all_reduce" (profiling_name's op)
  int32_t profiling_name = 0;      // strings: "nccl:all_reduce"
  int32_t sizes = 0;               // strings: the input sizes as JSON, "[[4],[2,3]]"
  int32_t dtypes = 0;              // strings: "Float", "Float,Double"
  int32_t where = 0;               // strings: "/path/train.py:88 in train_step", "" without frames
  int32_t site = 0;       // strings: the call site ranks compare, "train.py:88 in train_step"
  int32_t op_detail = 0;  // strings: "0->1" of "nccl:send 0->1", "1<-0" of a recv
  trace::TorchFrState state = trace::TorchFrState::kScheduled;
  bool done_by_dump = false;  // completed, retired (Gloo), or past the group's last_completed
  // A coalesced group of collectives, merged into this one entry: its op is
  // "coalesced(all_reduce,all_reduce)", its sizes and dtypes those of its members in turn.
  bool coalesced = false;
};

struct FrRankDump {
  int rank = 0;
  std::string file_name;
  std::string version;  // the dump's format version, "2.10"
  // Oldest first. A coalesced group of collectives (its ops sharing one collective_seq_id,
  // from format 2.7 on, and the closing `…:coalesced` entry) is one entry, as torch's
  // fr_trace takes it; a coalesced group of p2p ops stays one entry per op, each done when
  // the closing entry is (NCCL records the ops inside a group without events).
  std::vector<FrEntry> entries;
  int64_t entries_skipped = 0;  // malformed entries the reader left out
  // The first entry's record_id: above 0, the ring buffer wrapped (or only active entries
  // were dumped) and the rank's oldest ops are gone. nullopt before format 1.4.
  std::optional<int64_t> first_record_id;
};

struct FrRun {
  std::string dir;
  std::string prefix;  // the file-name prefix the dumps share
  int world_size = 0;
  std::string world_size_source;                // "pg_config" or "file names"
  std::vector<FrRankDump> dumps;                // by rank, one per rank
  std::vector<int> missing_ranks;               // 0..world_size-1 without a usable dump
  std::vector<trace::LocatedIssue> unreadable;  // files left out, and why
  std::vector<std::string> other_prefixes;      // other dump sets in the dir, not analysed
  int64_t entries_skipped = 0;                  // malformed entries left out, every dump
  std::string first_entry_problem;              // "file: what", of the first of them
  std::vector<FrGroupName> groups;
  StringTable strings;

  const FrRankDump* DumpOf(int rank) const;
  const std::string& Str(int32_t index) const { return strings[index]; }
};

// The dumps in `dir` (the prefix with most files when none is given), or nullopt when the
// directory holds none. Throws RunInputError only when the directory cannot be listed.
std::optional<FrRun> LoadFrRun(const std::string& dir, const std::optional<std::string>& prefix);

// "train.py:88 in train_step" of FrEntry::where's "/path/train.py:88 in train_step".
std::string ShortWhere(std::string_view where);

}  // namespace dsdiag::analyzers::torch_fr
