#include "analyzers/kinds/common/param_table.h"

namespace dsdiag::analyzers {

bool ReadIntArray(const trace::Record& record, const char* key, std::vector<int>* out) {
  // Has() answers from the record's member list: most `grad` records lack `missing`.
  std::vector<int64_t> values;
  if (!record.Has(key) || !record.IntArray(key, &values)) return false;
  out->assign(values.begin(), values.end());
  return true;
}

std::optional<ParamTable> ParamTable::FromRecord(const trace::Record& record) {
  ParamTable table;
  if (!record.StrArray("names", &table.names)) return std::nullopt;
  // Written once per run: the JSON tree is cheap enough here.
  const std::optional<trace::JsonValue> buckets = record.Value("buckets");
  if (buckets && buckets->is_array()) {
    for (const trace::JsonValue& b : buckets->elements()) {
      if (!b.is_array()) return std::nullopt;
      std::vector<int> bucket;
      for (const trace::JsonValue& v : b.elements()) {
        if (v.kind() != trace::JsonValue::Kind::kInt) return std::nullopt;
        bucket.push_back(static_cast<int>(v.as_int()));
      }
      table.buckets.push_back(std::move(bucket));
    }
  }
  if (record.Has("buffers") && !record.StrArray("buffers", &table.buffers)) return std::nullopt;
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

}  // namespace dsdiag::analyzers
