// Flight Recorder dumps as each format version's dump() writes them, for tests: emulations
// written from torch's sources (no dump of an old torch is at hand), in the key order, types
// and container layout of each version (docs/torch-flight-recorder.md, "Layouts by format
// version", says which source each follows). Pickles go through trace/torch_fr's
// PickleWriter (torch::jit::Pickler's opcodes); the JSON form is written as nlohmann writes
// it (keys sorted, `0` for a time not reached, pg_status numbers as strings).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dsdiag::testing {

// The layouts torch 2.2 to 2.13 wrote, by format version (the dump's `version`).
enum class FrLayout {
  kList,   // torch 2.2: a bare list of entries, seq_id, time_created_us
  kV1_4,   // torch 2.3: {entries, version, pg_config {pg_id: [ranks]}}, seq_id, op_id
  kV2_1,   // torch 2.4: process_group, collective/p2p seq ids, dtypes, is_p2p
  kV2_4,   // torch 2.5-2.7: + pg_status, timeout_ms; JSON form
  kV2_9,   // torch 2.8: + thread_name, thread_id, nccl_version
  kV2_10,  // torch 2.9-2.13: nccl_version renamed comm_lib_version
};
const char* FrLayoutVersion(FrLayout layout);  // "" for kList, "1.4", ...
bool FrLayoutHasJson(FrLayout layout);         // dump_json came with format 2.2

// One recorded op. Times derive from `index` (the entry's place in the dump).
struct FrOpSpec {
  std::string pg_name = "0";
  std::string pg_desc = "default_pg";
  int64_t pg_id = 0;
  int64_t collective_seq = 0;
  int64_t p2p_seq = 0;
  int64_t op_id = 0;
  std::string profiling_name = "nccl:all_reduce";
  std::vector<std::vector<int64_t>> sizes = {{4}};
  std::string dtype = "Float";
  std::string state = "completed";  // "scheduled", "started", "completed"
  bool retired = true;
  bool is_p2p = false;
  int line = 10;  // the user's frame: train.py:<line> in step
};

struct FrRankSpec {
  std::vector<FrOpSpec> ops;
  std::vector<int64_t> world;                      // pg_config's ranks of group "0" (pg_id 0)
  std::vector<std::vector<int64_t>> other_groups;  // pg_config's ranks of groups "1", "2", ...
  int64_t first_record_id = 0;                     // above 0: the ring buffer wrapped
  int64_t timeout_ms = 600000;
  // Ops pg_status counts that the entries do not show: torch 2.13's Gloo counts its sends and
  // recvs there, and records none of them.
  int64_t status_offset = 0;
};

// The rank's dump in `layout`, as a pickle or (layouts with JSON) as JSON.
std::string EmulatedFrPickle(FrLayout layout, const FrRankSpec& rank);
std::string EmulatedFrJson(FrLayout layout, const FrRankSpec& rank);

// `n` world-group all_reduces (seq 1..n) of 4 Float elements, all completed and retired
// unless `last_pending` (then the last one is `started` and not retired, as NCCL's is).
std::vector<FrOpSpec> AllReduces(int n, bool last_pending);

}  // namespace dsdiag::testing
