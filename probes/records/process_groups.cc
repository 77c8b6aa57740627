#include "probes/records/process_groups.h"

#include "probes/records/write_record.h"

namespace dsdiag::probes::records {

int64_t WriteGroup(probes::Session* session, const ProcessGroupInfo& group) noexcept {
  const int64_t pg = trace::records::GroupNumber(group.name, group.is_default);
  trace::records::GroupRecord r;
  r.pg = pg;
  r.name = group.name;
  r.desc = group.desc;
  r.backend = group.backend;
  r.ranks = &group.ranks;
  r.group_rank = group.group_rank;
  WriteRecord(session, r);
  return pg;
}

void WriteMesh(probes::Session* session, const MeshLayout& mesh) noexcept {
  trace::records::MeshRecord r;
  r.shape = &mesh.shape;
  r.dims = &mesh.dims;
  r.coord = &mesh.coord;
  r.pgs = &mesh.pgs;
  WriteRecord(session, r);
}

}  // namespace dsdiag::probes::records
