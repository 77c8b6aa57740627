#include "trace/records/params_record.h"

#include <algorithm>

#include "trace/json_line.h"
#include "trace/json_value.h"

namespace dsdiag::trace::records {
namespace {

using K = ParamsKeys;

// [[0,1],[2]]; false when not an array of arrays of integers.
bool ReadBuckets(const Record& record, std::vector<std::vector<int>>* out) {
  // Written once per run: the JSON tree is cheap enough here.
  const std::optional<JsonValue> buckets = record.Value(K::buckets);
  if (!buckets) return true;
  if (!buckets->is_array()) return false;
  for (const JsonValue& b : buckets->elements()) {
    if (!b.is_array()) return false;
    std::vector<int> bucket;
    for (const JsonValue& v : b.elements()) {
      if (v.kind() != JsonValue::Kind::kInt) return false;
      bucket.push_back(static_cast<int>(v.as_int()));
    }
    out->push_back(std::move(bucket));
  }
  return true;
}

void ReadShapes(const Record& record, std::vector<std::vector<int64_t>>* out) {
  const std::optional<JsonValue> shapes = record.Value(K::shapes);
  if (!shapes || !shapes->is_array()) return;
  for (const JsonValue& s : shapes->elements()) {
    std::vector<int64_t> shape;
    for (const JsonValue& d : s.elements()) shape.push_back(d.as_int());
    out->push_back(std::move(shape));
  }
}

}  // namespace

std::optional<ParamTable> ParamTable::Read(const Record& record) {
  ParamTable table;
  if (!record.StrArray(K::names, &table.names)) return std::nullopt;
  if (!ReadBuckets(record, &table.buckets)) return std::nullopt;
  if (record.Has(K::buffers) && !record.StrArray(K::buffers, &table.buffers)) return std::nullopt;
  ReadShapes(record, &table.shapes);
  if (record.Has(K::dtypes)) record.StrArray(K::dtypes, &table.dtypes);
  std::vector<int64_t> replicas;
  if (record.Has(K::replicas) && !record.IntArray(K::replicas, &replicas)) return std::nullopt;
  table.replicas.assign(replicas.begin(), replicas.end());
  std::sort(table.replicas.begin(), table.replicas.end());
  return table;
}

std::string ParamTable::BufferName(int index) const {
  if (index >= 0 && index < static_cast<int>(buffers.size())) return buffers[index];
  return "buffer #" + std::to_string(index);
}

std::string ParamTable::ParamName(int index) const {
  if (index >= 0 && index < static_cast<int>(names.size())) return names[index];
  return "param #" + std::to_string(index);
}

std::string ParamTable::BucketName(int index) const {
  std::string text = "bucket " + std::to_string(index);
  if (index < 0 || index >= static_cast<int>(buckets.size()) || buckets[index].empty()) return text;
  const std::vector<int>& b = buckets[index];
  text += " (" + ParamName(b[0]);
  if (b.size() > 1) text += ", " + ParamName(b[1]);
  if (b.size() > 2) text += " +" + std::to_string(b.size() - 2) + " more";
  return text + ")";
}

std::string ParamTable::Describe(bool per_param, int index) const {
  return per_param ? ParamName(index) : BucketName(index);
}

void AppendFields(const ParamTable& t, JsonLine* line) {
  line->BeginArray(K::names.name());
  for (const std::string& n : t.names) line->Add(n);
  line->EndArray().BeginArray(K::shapes.name());
  for (const auto& shape : t.shapes) {
    line->BeginArray();
    for (int64_t d : shape) line->Add(d);
    line->EndArray();
  }
  line->EndArray().BeginArray(K::dtypes.name());
  for (const std::string& d : t.dtypes) line->Add(d);
  line->EndArray().BeginArray(K::buckets.name());
  for (const auto& bucket : t.buckets) {
    line->BeginArray();
    for (int i : bucket) line->Add(i);
    line->EndArray();
  }
  line->EndArray();
  if (!t.buffers.empty()) {
    line->BeginArray(K::buffers.name());
    for (const std::string& n : t.buffers) line->Add(n);
    line->EndArray();
  }
  if (!t.replicas.empty()) {
    line->BeginArray(K::replicas.name());
    for (int r : t.replicas) line->Add(r);
    line->EndArray();
  }
}

}  // namespace dsdiag::trace::records
