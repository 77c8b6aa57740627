#include "analyzers/param_table.h"

#include <simdjson.h>

namespace dsdiag::analyzers {
namespace {

bool ReadIntList(simdjson::dom::element element, std::vector<int>* out) {
  simdjson::dom::array array;
  if (element.get_array().get(array)) return false;
  out->clear();
  for (simdjson::dom::element e : array) {
    int64_t v;
    if (e.get_int64().get(v)) return false;
    out->push_back(static_cast<int>(v));
  }
  return true;
}

}  // namespace

bool ReadIntArray(const trace::Record& record, const char* key, std::vector<int>* out) {
  // Has() answers from the record's member list: most `grad` records lack `missing`.
  simdjson::dom::element element;
  if (!record.Has(key) || record.object()[key].get(element)) return false;
  return ReadIntList(element, out);
}

std::optional<ParamTable> ParamTable::FromRecord(const trace::Record& record) {
  ParamTable table;
  simdjson::dom::array names;
  if (record.object()["names"].get_array().get(names)) return std::nullopt;
  for (simdjson::dom::element e : names) {
    std::string_view name;
    if (e.get_string().get(name)) return std::nullopt;
    table.names.emplace_back(name);
  }
  simdjson::dom::array buckets;
  if (!record.object()["buckets"].get_array().get(buckets)) {
    for (simdjson::dom::element e : buckets) {
      std::vector<int> bucket;
      if (!ReadIntList(e, &bucket)) return std::nullopt;
      table.buckets.push_back(std::move(bucket));
    }
  }
  return table;
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
