#include "trace/records/group_record.h"

#include <cctype>

#include "trace/json_line.h"

namespace dsdiag::trace::records {
namespace {

// 2^30: above any counter name (9 digits) and the Python package's numbers of unnamed groups
// (10^9 + n), below 2^31, so that every pg fits the probes' int.
constexpr int64_t kHashedNames = int64_t{1} << 30;

bool IsCounterName(std::string_view name) {
  if (name.empty() || name.size() > 9) return false;  // 9 digits: well below 2^32
  for (char c : name)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

uint32_t Fnv1a(std::string_view text) {
  uint32_t h = 2166136261u;
  for (char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 16777619u;
  }
  return h;
}

template <typename T>
void AddInts(JsonLine* line, std::string_view key, const std::vector<T>& values) {
  line->BeginArray(key);
  for (T v : values) line->Add(static_cast<int64_t>(v));
  line->EndArray();
}

}  // namespace

int64_t GroupNumber(std::string_view name, bool is_default) {
  if (is_default) return 0;
  if (IsCounterName(name)) return std::stoll(std::string(name));
  return kHashedNames + (Fnv1a(name) >> 2);
}

void AppendFields(const GroupRecord& r, JsonLine* line) {
  line->Field(GroupKeys::pg.name(), r.pg).Field(GroupKeys::name.name(), r.name);
  if (!r.desc.empty()) line->Field(GroupKeys::desc.name(), r.desc);
  if (!r.backend.empty()) line->Field(GroupKeys::backend.name(), r.backend);
  AddInts(line, GroupKeys::ranks.name(), r.ranks ? *r.ranks : std::vector<int>{});
  line->Field(GroupKeys::group_rank.name(), static_cast<int64_t>(r.group_rank));
}

std::optional<GroupIdentity> GroupIdentity::Read(const Record& record) {
  GroupIdentity g;
  const auto pg = record.Int(GroupKeys::pg);
  const auto name = record.Str(GroupKeys::name);
  std::vector<int64_t> ranks;
  if (!pg || !name || !record.IntArray(GroupKeys::ranks, &ranks)) return std::nullopt;
  g.pg = *pg;
  g.name = std::string(*name);
  g.desc = std::string(record.Str(GroupKeys::desc).value_or(""));
  g.backend = std::string(record.Str(GroupKeys::backend).value_or(""));
  g.ranks.assign(ranks.begin(), ranks.end());
  g.group_rank = static_cast<int>(record.Int(GroupKeys::group_rank).value_or(0));
  return g;
}

std::string GroupIdentity::Label() const {
  std::string text = "pg " + std::to_string(pg);
  if (desc.empty() || desc == "undefined") return text;
  return text + " (" + desc + ")";
}

void AppendFields(const MeshRecord& r, JsonLine* line) {
  static const std::vector<int64_t> kNone;
  AddInts(line, MeshKeys::shape.name(), r.shape ? *r.shape : kNone);
  line->BeginArray(MeshKeys::dims.name());
  if (r.dims)
    for (const std::string& d : *r.dims) line->Add(d);
  line->EndArray();
  AddInts(line, MeshKeys::coord.name(), r.coord ? *r.coord : kNone);
  AddInts(line, MeshKeys::pgs.name(), r.pgs ? *r.pgs : kNone);
}

std::optional<MeshLayout> MeshLayout::Read(const Record& record) {
  MeshLayout m;
  if (!record.IntArray(MeshKeys::shape, &m.shape) || !record.IntArray(MeshKeys::coord, &m.coord) ||
      !record.IntArray(MeshKeys::pgs, &m.pgs))
    return std::nullopt;
  if (record.Has(MeshKeys::dims)) record.StrArray(MeshKeys::dims, &m.dims);
  if (m.coord.size() != m.shape.size() || m.pgs.size() != m.shape.size()) return std::nullopt;
  return m;
}

}  // namespace dsdiag::trace::records
