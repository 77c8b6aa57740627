// The `group` and `mesh` records (docs/trace-format.md, "`group`" and "`mesh`"), new in
// version 5: the process groups a rank belongs to and the device meshes it sits on, by the
// identity every member shares. Written once per group (or mesh) and rank, before the first
// `coll` or `p2p` record naming the group; by the Python package when a group is created or
// first used (python/dsdiag/torch/collectives/_groups.py), by a LibTorch loop through
// probes::records::WriteGroup. Read by the analyzers that compare ranks (which ranks must
// agree) and by the report and the timeline (a group's label).
//
//   {"type":"group","ts":..,"step":0,"pg":2,"name":"2","desc":"mesh_dp","backend":"gloo",
//    "ranks":[0,2],"group_rank":0}
//   {"type":"mesh","ts":..,"step":0,"shape":[2,2],"dims":["dp","tp"],"coord":[0,1],
//    "pgs":[2,1]}
//
// `pg` is what `coll`, `p2p`, `error` records and flight dumps call the group: GroupNumber
// of its `name`, so that two ranks' ops on one group have one number and two groups never
// share one, whatever order each rank created them in (version 4 numbered a rank's groups
// in the order it met them: {0,1} and {2,3} were both "pg 1").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trace/record.h"

namespace dsdiag::trace {
class JsonLine;
}  // namespace dsdiag::trace

namespace dsdiag::trace::records {

struct GroupKeys {
  static constexpr FieldKey pg{"pg"};                  // GroupNumber(name)
  static constexpr FieldKey name{"name"};              // torch's group name, one on all members
  static constexpr FieldKey desc{"desc"};              // "default_pg", "mesh_dp", ...; optional
  static constexpr FieldKey backend{"backend"};        // "gloo", "nccl", ...; optional
  static constexpr FieldKey ranks{"ranks"};            // global ranks, in group-rank order
  static constexpr FieldKey group_rank{"group_rank"};  // this rank's rank in the group
};

// The number a group's records call it by, from the name every member knows it by: the
// default group is 0; torch names the groups it numbers "1", "2", ... (its own creation
// counter, the same on every rank that created them in one order): that number (up to 9
// digits); any other name (a hash of the ranks: split_group, use_local_synchronization)
// 2^30 + the top 30 bits of its FNV-1a hash, which no counter reaches; every pg < 2^31.
int64_t GroupNumber(std::string_view name, bool is_default);

struct GroupRecord {
  static constexpr std::string_view kType = rec::kGroup;
  int64_t pg = 0;
  std::string_view name;
  std::string_view desc;     // written when not empty
  std::string_view backend;  // written when not empty
  const std::vector<int>* ranks = nullptr;
  int group_rank = 0;
};
void AppendFields(const GroupRecord& r, JsonLine* line);

// A group as readers hold it.
struct GroupIdentity {
  int64_t pg = 0;
  std::string name;
  std::string desc;
  std::string backend;
  std::vector<int> ranks;  // global, in group-rank order
  int group_rank = 0;

  // Nullopt when `pg`, `name` or `ranks` is missing or mistyped.
  static std::optional<GroupIdentity> Read(const Record& record);
  // "pg 2 (mesh_dp: ranks 0,2)", "pg 0".
  std::string Label() const;
};

struct MeshKeys {
  static constexpr FieldKey shape{"shape"};  // ranks along each dimension
  static constexpr FieldKey dims{"dims"};    // each dimension's name ("dp", "tp", ...)
  static constexpr FieldKey coord{"coord"};  // this rank's index along each dimension
  static constexpr FieldKey pgs{"pgs"};      // the `pg` of this rank's group along each one
};

struct MeshRecord {
  static constexpr std::string_view kType = rec::kMesh;
  const std::vector<int64_t>* shape = nullptr;
  const std::vector<std::string>* dims = nullptr;  // may be empty: unnamed dimensions
  const std::vector<int64_t>* coord = nullptr;
  const std::vector<int64_t>* pgs = nullptr;
};
void AppendFields(const MeshRecord& r, JsonLine* line);

struct MeshLayout {
  std::vector<int64_t> shape;
  std::vector<std::string> dims;
  std::vector<int64_t> coord;
  std::vector<int64_t> pgs;

  // Nullopt when `shape`, `coord` or `pgs` is missing, or their lengths differ.
  static std::optional<MeshLayout> Read(const Record& record);
};

}  // namespace dsdiag::trace::records
