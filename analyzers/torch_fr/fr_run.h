// FrRun: a directory of PyTorch Flight Recorder dumps (one `<prefix><rank>` file per rank,
// trace/torch_fr/) as one job: the dumps read, the job's world size, the ranks that left no
// dump and the files that could not be used. What a job that ran without dsdiag leaves
// behind; `dsdiag compare` analyses it (fr_compare.h).
//
// The world size is the largest rank list a dump's `pg_config` gives (the default group's
// members), else one more than the highest rank with a file: a missing rank past every file
// cannot be seen, and the summary says how the size was found. A file that is no dump, or
// cannot be read, is a LocatedIssue (file, byte or line, what was expected), never a crash.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "trace/located_issue.h"
#include "trace/torch_fr/torch_fr_dump.h"

namespace dsdiag::analyzers::torch_fr {

struct FrRankDump {
  int rank = 0;
  std::string file_name;
  trace::TorchFrDump dump;
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
  int64_t entries_skipped = 0;                  // malformed entries left out, over every dump

  const FrRankDump* DumpOf(int rank) const;
};

// The dumps in `dir` (the prefix with most files when none is given), or nullopt when the
// directory holds none. Throws RunInputError only when the directory cannot be listed.
std::optional<FrRun> LoadFrRun(const std::string& dir, const std::optional<std::string>& prefix);

}  // namespace dsdiag::analyzers::torch_fr
