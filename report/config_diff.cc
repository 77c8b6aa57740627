#include "report/config_diff.h"

#include <algorithm>
#include <map>
#include <utility>

#include "trace/json_value.h"

namespace dsdiag::report {
namespace {

using trace::JsonValue;

// section -> key -> displayed value -> ranks
using Values = std::map<std::string, std::vector<int>>;
using Keys = std::map<std::string, Values>;

std::string Display(const JsonValue& v) {
  return v.kind() == JsonValue::Kind::kString ? v.as_string() : v.ToJson();
}

void Collect(const std::map<std::string, std::string>& entries, int rank, Keys* keys) {
  for (const auto& [key, value] : entries) (*keys)[key][value].push_back(rank);
}

void Collect(const JsonValue& object, int rank, Keys* keys) {
  if (!object.is_object()) return;
  for (const auto& [key, value] : object.members()) (*keys)[key][Display(value)].push_back(rank);
}

// The ranks that do not appear under any value of the key.
std::vector<int> Lacking(const Values& values, const std::vector<int>& all) {
  std::vector<int> present;
  for (const auto& entry : values)
    present.insert(present.end(), entry.second.begin(), entry.second.end());
  std::sort(present.begin(), present.end());
  std::vector<int> lacking;
  std::set_difference(all.begin(), all.end(), present.begin(), present.end(),
                      std::back_inserter(lacking));
  return lacking;
}

ConfigKey MakeKey(const std::string& section, const std::string& key, const Values& values,
                  const std::vector<int>& all) {
  ConfigKey out;
  out.section = section;
  out.key = key;
  for (const auto& [value, ranks] : values) out.values.push_back({value, false, ranks});
  std::vector<int> lacking = Lacking(values, all);
  if (!lacking.empty()) out.values.push_back({"(absent)", true, std::move(lacking)});
  // Most ranks first: the odd ones out come last, where the eye expects them.
  std::stable_sort(
      out.values.begin(), out.values.end(),
      [](const ConfigValue& a, const ConfigValue& b) { return a.ranks.size() > b.ranks.size(); });
  return out;
}

}  // namespace

ConfigDiff DiffConfigs(const std::vector<analyzers::RankInfo>& ranks) {
  std::vector<int> all;
  Keys versions, env, config;
  for (const analyzers::RankInfo& r : ranks) {
    all.push_back(r.rank);
    Collect(r.header.versions, r.rank, &versions);
    Collect(r.header.env, r.rank, &env);
    Collect(r.header.config, r.rank, &config);
  }
  std::sort(all.begin(), all.end());
  ConfigDiff diff;
  const std::pair<const char*, const Keys*> sections[] = {
      {"versions", &versions}, {"env", &env}, {"config", &config}};
  for (const auto& [section, keys] : sections) {
    for (const auto& [key, values] : *keys) {
      ConfigKey k = MakeKey(section, key, values, all);
      (k.values.size() > 1 ? diff.differing : diff.common).push_back(std::move(k));
    }
  }
  return diff;
}

}  // namespace dsdiag::report
