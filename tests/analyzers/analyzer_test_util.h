// Runs one analyzer over a run directory, the way `dsdiag compare` runs all of them.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "analyzers/framework/compare.h"

namespace dsdiag::analyzers::testing {

inline std::vector<Finding> RunOne(std::unique_ptr<Analyzer> analyzer, const std::string& dir) {
  std::vector<std::unique_ptr<Analyzer>> analyzers;
  analyzers.push_back(std::move(analyzer));
  return RunCompareWith(dir, analyzers).findings;
}

// The evidence member `key` as compact JSON ("" when absent), for terse assertions.
inline std::string Evidence(const Finding& f, std::string_view key) {
  const trace::JsonValue* v = f.evidence.Find(key);
  return v ? v->ToJson() : "";
}

// The same as text, a string unquoted ("0", not "\"0\""), for comparing with a literal.
inline std::string EvidenceText(const Finding& f, std::string_view key) {
  const trace::JsonValue* v = f.evidence.Find(key);
  return v ? v->ToDisplay() : "";
}

// Every finding, one line each ("error hang rank 1 never joined ..."): a failure's message.
inline std::string Listing(const std::vector<Finding>& findings) {
  std::string out;
  for (const Finding& f : findings)
    out += std::string(SeverityName(f.severity)) + " " + f.kind + " " + f.summary + "\n";
  return out;
}

}  // namespace dsdiag::analyzers::testing
