// TorchFrDump: one rank's PyTorch Flight Recorder dump (TORCH_FR_BUFFER_SIZE, formerly
// TORCH_NCCL_TRACE_BUFFER_SIZE), read without torch. The file `<prefix><global rank>`
// (default `nccl_trace_rank_<R>`) holds a pickle written by torch::jit::Pickler, or the same
// content as JSON from `_dump_fr_trace_json()` (docs/torch-flight-recorder.md):
//
//   {'version': '2.10', 'comm_lib_version': '',
//    'pg_config': {'0': {'name': '0', 'desc': 'default_pg', 'ranks': '[0, 1]'}},
//    'pg_status': {'0': {'last_enqueued_collective': 3, 'last_started_collective': -1,
//                        'last_completed_collective': 3}},
//    'entries': [{'record_id': 0, 'pg_id': 0, 'process_group': ('0', 'default_pg'),
//                 'collective_seq_id': 1, 'p2p_seq_id': 0, 'op_id': 1,
//                 'profiling_name': 'gloo:all_reduce', 'time_created_ns': 17962179893...,
//                 'input_sizes': [[4]], 'input_dtypes': ['Float'], 'output_sizes': [[4]],
//                 'output_dtypes': ['Float'], 'state': 'scheduled', 'retired': True,
//                 'time_discovered_started_ns': None, 'time_discovered_completed_ns': None,
//                 'timeout_ms': 1800000, 'is_p2p': False, 'thread_id': '1405...',
//                 'thread_name': 'python', 'frames': [{'name': 'all_reduce',
//                 'filename': '.../distributed_c10d.py', 'line': 3245}, ...]}]}
//
// Every layout torch 2.2 to 2.13 writes is read into the one model below: the first (torch
// 2.2), a bare list of entries with `seq_id` and `time_created_us`; the dict of format
// versions "2.x" with fields added over time (record_id, process_group, collective/p2p
// sequence numbers, op_id, dtypes — once ScalarType numbers, later names —, pg_config,
// pg_status, timings, is_p2p, thread, comm_lib_version). A field a version lacks is empty
// or nullopt here, never invented.
//
// Caveats the reader keeps, for the analysis to weigh: entries are the rank's whole ring
// buffer (every process group, oldest first); an entry's `state` comes from the backend's
// events, and Gloo has none — its entries stay "scheduled" once finished, which `retired`
// and pg_status's last_completed_collective tell; the JSON form carries no frames.
//
// ParseTorchFrDump never throws and never reads out of bounds: an empty, cut-short or
// foreign file (another pickle, a dsdiag trace or flight dump) yields nullopt and a
// LocatedIssue naming the file and the byte (pickle) or line:column (JSON). A bad entry is
// skipped and counted, as in trace/flight_dump.h; unknown fields are ignored.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trace/located_issue.h"

namespace dsdiag::trace {

enum class TorchFrFormat { kPickle, kJson };
std::string_view TorchFrFormatName(TorchFrFormat format);  // "pickle", "json"

// The three states torch writes. Entries of the first layout had the same three.
enum class TorchFrState { kScheduled, kStarted, kCompleted };
std::string_view TorchFrStateName(TorchFrState state);  // "scheduled", "started", "completed"

// One Python frame that issued the collective (innermost first, as torch writes them).
struct TorchFrFrame {
  std::string filename;
  int64_t line = 0;
  std::string name;
};

struct TorchFrEntry {
  std::optional<int64_t> record_id;  // the ring buffer's running id (not in torch 2.2)
  int64_t pg_id = 0;                 // the backend's uid for the group, rank-local
  // process_group = (name, desc): the name is the group's job-wide name ("0", "1", or a
  // hash), the desc "default_pg", "undefined" or the user's group_desc. Empty in torch 2.2.
  std::string pg_name;
  std::string pg_desc;
  // Sequence numbers within the group: collective_seq_id counts collectives (one per
  // coalesced group), p2p_seq_id point-to-point ops; torch 2.2's `seq_id` is read as
  // collective_seq_id. op_id counts logical ops, one per op inside a coalesced group.
  int64_t collective_seq_id = 0;
  std::optional<int64_t> p2p_seq_id;
  std::optional<int64_t> op_id;
  std::string profiling_name;  // "nccl:all_reduce", "gloo:broadcast", "nccl:send 0->1"
  TorchFrState state = TorchFrState::kScheduled;
  std::optional<bool> retired;  // no longer watched: done, or timed out if not completed
  std::optional<bool> is_p2p;
  std::optional<int64_t> time_created_ns;  // wall clock (torch 2.2's microseconds * 1000)
  std::optional<int64_t> time_discovered_started_ns;    // JSON writes 0 for none: nullopt
  std::optional<int64_t> time_discovered_completed_ns;  // here too
  std::optional<double> duration_ms;                    // only with timing enabled
  std::optional<int64_t> timeout_ms;
  std::vector<std::vector<int64_t>> input_sizes;  // one shape per tensor
  std::vector<std::vector<int64_t>> output_sizes;
  // "Float", "BFloat16", ... (c10::toString names); early 2.x numbers are named the same.
  std::vector<std::string> input_dtypes;
  std::vector<std::string> output_dtypes;
  bool has_dtypes = false;  // the writer recorded dtypes (absent before ~torch 2.4)
  std::string thread_id;    // newer versions: the issuing thread
  std::string thread_name;
  std::vector<TorchFrFrame> frames;  // empty in JSON dumps and without stack traces

  // "nccl" and "all_reduce" of "nccl:all_reduce"; "send" and "0->1" of "nccl:send 0->1".
  std::string_view backend() const;
  std::string_view op() const;
  std::string_view op_detail() const;
  // The entry that closes a coalesced group, not an op of its own: "nccl:coalesced", or
  // "nccl:ALLGATHER_coalesced" / "nccl:REDUCE_SCATTER_coalesced" (endCoalescing's op type,
  // upper case) — not "allreduce_coalesced" and the like, which are collectives of their own.
  bool is_coalesced_marker() const;
  // Elements of all input (output) tensors: the product of each shape, summed.
  int64_t input_numel() const;
  int64_t output_numel() const;
};

// pg_config: the groups this rank knows and their members (global ranks). Written as text
// ("[0, 1]"); `ranks` is empty when that text is not a list of integers.
struct TorchFrGroup {
  std::string key;  // the pg_config key: the group's name
  std::string name;
  std::string desc;
  std::string ranks_text;
  std::vector<int64_t> ranks;
};

// pg_status (format 2.3 and later): the last sequence numbers per group, keyed by pg_id.
// JSON writes them as strings; -1 means none yet.
struct TorchFrGroupStatus {
  std::string pg_id;
  std::optional<int64_t> last_enqueued;
  std::optional<int64_t> last_started;
  std::optional<int64_t> last_completed;
};

struct TorchFrDump {
  std::string file;  // as given to the parser
  TorchFrFormat format = TorchFrFormat::kPickle;
  std::string version;               // "2.10"; empty for torch 2.2's bare list
  std::optional<int> version_major;  // 2 and 10 of "2.10"
  std::optional<int> version_minor;
  std::optional<int> rank;       // the global rank the file name claims (the digits at its end)
  std::string comm_lib_version;  // format 2.6 and later (NCCL's version; "" for Gloo)
  std::vector<TorchFrGroup> groups;
  std::vector<TorchFrGroupStatus> group_status;
  std::vector<TorchFrEntry> entries;  // oldest first
  // Read side: malformed entries left out, and what was wrong with the first of them.
  int64_t entries_skipped = 0;
  std::string first_entry_problem;

  // Before format 2.7 only the p2p ops inside a coalesced group were recorded one by one (a
  // group of collectives is its closing "coalesced" entry alone); from 2.7 every op is.
  bool records_coalesced_collectives() const;
  const TorchFrGroup* FindGroup(std::string_view pg_name) const;
  const TorchFrGroupStatus* FindStatus(int64_t pg_id) const;
};

// Which form `bytes` are, from their first bytes: a pickle (0x80, then a protocol byte) or
// a JSON object ('{' after optional whitespace); nullopt for anything else.
std::optional<TorchFrFormat> SniffTorchFrFormat(std::string_view bytes);

// The digits at the end of a file name (`nccl_trace_rank_12` → 12), or nullopt.
std::optional<int> TorchFrRankFromFileName(std::string_view file_name);

// Parses a whole dump. `file_name` names it in issues; its trailing digits are the rank.
std::optional<TorchFrDump> ParseTorchFrDump(const std::string& file_name, std::string_view bytes,
                                            LocatedIssue* issue);
// Reads (at most 64 MiB) and parses one file.
std::optional<TorchFrDump> ReadTorchFrDumpFile(const std::string& path, LocatedIssue* issue);

}  // namespace dsdiag::trace
