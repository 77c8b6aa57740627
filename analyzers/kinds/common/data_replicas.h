// DataReplicas: which ranks must train on the same batches — the ranks that compute one
// data-parallel replica together (its tensor-parallel peers) — from what the job declared:
//   - a device mesh (`mesh` record) with a tensor-parallel dimension (named "tp", "tensor"
//     or "tensor_parallel": torchtitan's and DTensor's tutorials' name): the rank's group
//     along it;
//   - replica sets (`params` record's `replicas`, DDP over a data-parallel sub-group): a
//     group of the rank's (`group` record, not the default one, not a pipeline's by its
//     description) whose members all sit at the same position of a replica set of the same
//     size — Megatron's tensor-parallel group beside its data-parallel one.
// Read by input-divergence (those ranks fed different batches) and shard-overlap (those ranks
// holding the same shard is by design). Records of step 0 (groups, meshes, the table) are
// in before a step's batches are compared.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "trace/record.h"
#include "trace/records/group_record.h"

namespace dsdiag::analyzers {

class DataReplicas {
 public:
  // `params`, `group` and `mesh` records; any other is ignored.
  void Note(int rank, const trace::Record& record);

  // The sets of ranks that must train on the same batches, each ascending, two ranks or
  // more, lowest rank first.
  const std::vector<std::vector<int>>& Sets();
  // The lowest rank of the ranks that must train on `rank`'s batches (itself when none).
  int ReplicaOf(int rank);

 private:
  void Recompute();

  std::map<int, std::vector<int>> replicas_;  // rank -> its params record's replicas
  std::map<int, std::map<int64_t, trace::records::GroupIdentity>> groups_;  // rank -> pg -> it
  std::map<int, trace::records::MeshLayout> meshes_;  // rank -> its first mesh
  bool stale_ = false;
  std::vector<std::vector<int>> sets_;
  std::map<int, int> replica_of_;  // rank -> the lowest rank of its set
};

}  // namespace dsdiag::analyzers
