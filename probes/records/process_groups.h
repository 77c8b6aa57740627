// The `group` and `mesh` records (trace/records/group_record.h): which process groups a rank
// belongs to and which device mesh it sits on, by the identity every member shares. A
// LibTorch loop declares each group it uses before its first collective on it and passes
// the number WriteGroup returns as the `pg` of its CollectiveScope and PeerOp calls:
//
//   probes::records::ProcessGroupInfo dp{"2", "dp", "gloo", {0, 2}, /*group_rank=*/0};
//   const int64_t dp_pg = probes::records::WriteGroup(session, dp);
//
// The Python package declares torch's groups the same way. One branch when probes are off.
// Torch-free.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "probes/records/session_fwd.h"
#include "trace/records/group_record.h"

namespace dsdiag::probes::records {

struct ProcessGroupInfo {
  std::string name;         // c10d's group name, the same on every member ("0": the default)
  std::string desc;         // what the loop calls it ("dp", "tp", "mesh_dp"); may be empty
  std::string backend;      // "gloo", "nccl"; may be empty
  std::vector<int> ranks;   // its global ranks, in group-rank order
  int group_rank = 0;       // this rank's rank in it
  bool is_default = false;  // the default (world) group: pg 0 whatever its name
};

// Writes the group's record (call it once per group) and returns its pg number,
// trace::records::GroupNumber of its name, which is also what it returns with probes off.
int64_t WriteGroup(probes::Session* session, const ProcessGroupInfo& group) noexcept;

using MeshLayout = trace::records::MeshLayout;
// A device mesh this rank sits on: each dimension's size and name, the rank's coordinate
// and the pg of its group along each dimension (WriteGroup's numbers).
void WriteMesh(probes::Session* session, const MeshLayout& mesh) noexcept;

}  // namespace dsdiag::probes::records
