// ConfigDiff: the settings recorded in every rank's header (`versions`, `env`, `config`),
// split into those all ranks agree on and those that differ, with which ranks hold which
// value. A key some ranks lack counts as a value of its own ("(absent)").
//
// Built from the headers alone (the run loader has read them already): O(ranks x keys).
#pragma once

#include <string>
#include <vector>

#include "analyzers/framework/run_context.h"

namespace dsdiag::report {

struct ConfigValue {
  std::string value;       // as displayed: strings unquoted, other JSON compact
  bool absent = false;     // the ranks below lack the key
  std::vector<int> ranks;  // sorted
};

struct ConfigKey {
  std::string section;  // "versions", "env", "config"
  std::string key;
  std::vector<ConfigValue> values;  // most ranks first; one value when common
};

struct ConfigDiff {
  std::vector<ConfigKey> differing;  // by section, then key
  std::vector<ConfigKey> common;
};

ConfigDiff DiffConfigs(const std::vector<analyzers::RankInfo>& ranks);

}  // namespace dsdiag::report
