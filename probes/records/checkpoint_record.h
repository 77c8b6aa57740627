// The `ckpt` record (docs/trace-format.md): one checkpoint save or load, a span record
// (`ts` = its start) with the path, size, parameter digest and, for a load, what did not
// match. Written by the trainer after each save and load, then flushed. One branch when
// probes are off. Torch-free.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "probes/records/session_fwd.h"

namespace dsdiag::probes::records {

struct CheckpointRecord {
  std::string op;  // "save", "load"
  std::string path;
  int64_t bytes = 0;
  uint64_t hash = 0;  // digest of the model parameters saved / loaded
  int64_t ckpt_step = 0;
  int64_t epoch = 0;
  int64_t dur = 0;
  std::string map_location;  // load only
  bool prefix_stripped = false;
  std::vector<std::string> missing, unexpected;  // load only
};
void WriteCheckpoint(probes::Session* session, const CheckpointRecord& r) noexcept;

}  // namespace dsdiag::probes::records
