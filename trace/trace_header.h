// TraceHeader: the first record of every rank file — who wrote it, with what, and how its
// clock relates to wall time and to rank 0. Everything constant for a rank lives here so
// that event records stay short.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "trace/clock_reference.h"
#include "trace/json_value.h"

namespace dsdiag::trace {

struct TraceHeader {
  std::string schema;  // kSchema when written by this version
  std::string run_id;  // shared by every rank of one run
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  std::string host;
  int64_t pid = 0;
  std::map<std::string, std::string> versions;  // "dsdiag", "libtorch", "cuda", "nccl"
  std::map<std::string, std::string> env;       // NCCL_*, OMP_*, CUDA_VISIBLE_DEVICES, ...
  JsonValue config = JsonValue::Object();       // the run's settings, flat: name -> value
  ClockReference clock;
  // Sections later probes add (e.g. "determinism", "loader"); written as top-level keys.
  JsonValue sections = JsonValue::Object();
};

// Environment variables worth recording: NCCL_*, GLOO_*, OMP_*, MKL_*, TORCH_*, CUDA_*,
// MASTER_ADDR/PORT, WORLD_SIZE, LOCAL_WORLD_SIZE, SLURM_* and OMPI_* job ids.
std::map<std::string, std::string> CollectRelevantEnv();

// Whether `key` is one of the header's own top-level fields (the common record fields
// included); any other top-level key of a header record is a section.
bool IsHeaderField(std::string_view key);

// The major version of a trace schema, "dsdiag.trace/<major>[.<minor>]" → major; -1 when
// `schema` is not a dsdiag trace schema.
int TraceSchemaMajor(std::string_view schema);
// Whether this reader reads `schema`: majors kOldestSchemaMajor to kSchemaMajor (1 to 5).
bool IsReadableSchema(std::string_view schema);

// Appends the header as one JSON line (with "type":"header", "ts", "step":0).
void AppendHeaderRecord(const TraceHeader& header, int64_t ts_ns, std::string* out);

}  // namespace dsdiag::trace
