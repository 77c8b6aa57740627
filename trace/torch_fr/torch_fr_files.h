// FindTorchFrDumps: the Flight Recorder dumps in a directory. Torch names each rank's file
// `<prefix><global rank>` — TORCH_FR_DUMP_TEMP_FILE (formerly TORCH_NCCL_DEBUG_INFO_TEMP_FILE)
// is the prefix, `/tmp/nccl_trace_rank_` by default, and jobs set their own
// (`comm_lib_trace_rank_`). So a candidate is any regular file whose name ends in digits: the
// digits are its rank, the rest its prefix. Without an explicit prefix a candidate must also
// look like a dump by content (a pickle whose first bytes name Flight Recorder keys, or a
// JSON object with them and no dsdiag "schema"); dsdiag's own `rank-<R>.jsonl[.zst]` and
// `flight-rank-<R>.json` are never candidates. Candidates are grouped by prefix; with an
// explicit prefix only that group is kept, and its files are taken without sniffing (their
// parse then reports what is wrong with them).
//
// The directory is read once, not recursively; only the first 4 KiB of a file are read to
// sniff it. A prefix that torch's fr_trace would infer (one group) is the usual case; several
// groups mean several jobs or several backends' dumps, and the caller chooses.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trace/torch_fr/torch_fr_dump.h"

namespace dsdiag::trace {

struct TorchFrFile {
  std::string path;
  std::string name;  // the file name alone
  int rank = 0;
  std::optional<TorchFrFormat> format;  // from the sniff; nullopt when not sniffed as a dump
};

struct TorchFrFileGroup {
  std::string prefix;
  std::vector<TorchFrFile> files;  // by rank, one file per rank
  // Files of this prefix that claim a rank already taken ("x_3" and "x_03"): the first by
  // name is kept.
  std::vector<std::string> duplicate_names;
};

struct TorchFrFindOptions {
  std::optional<std::string> prefix;  // given: only `<prefix><digits>`, taken unsniffed
};

struct TorchFrFindResult {
  std::vector<TorchFrFileGroup> groups;  // by prefix
  std::vector<std::string> not_dumps;    // names ending in digits whose content is no dump
  std::string error;                     // the directory could not be read
};

// The rank and prefix a file name claims: its trailing digits and what precedes them.
struct TorchFrFileName {
  std::string prefix;
  int rank = 0;
};
std::optional<TorchFrFileName> SplitTorchFrFileName(std::string_view name);

// Whether the first bytes of a file look like a Flight Recorder dump, and in which form.
std::optional<TorchFrFormat> SniffTorchFrDump(std::string_view head);

TorchFrFindResult FindTorchFrDumps(const std::string& dir, const TorchFrFindOptions& options = {});

}  // namespace dsdiag::trace
