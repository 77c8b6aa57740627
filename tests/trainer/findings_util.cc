#include "tests/trainer/findings_util.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include "trace/trace_reader.h"

namespace dsdiag::trainer_test {

std::vector<trace::JsonValue> CompareRun(const std::string& run_dir) {
  const std::string log = run_dir + ".compare.json";
  const int status = RunDsdiag({"compare", run_dir, "--format", "json"}, log, 60);
  const std::string text = ReadFile(log);
  EXPECT_TRUE(status == 0 || status == 1) << text;
  const size_t start = text.find("{\"schema\"");
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (start == std::string::npos || parser.parse(text.substr(start)).get(root)) {
    ADD_FAILURE() << "no findings JSON in: " << text;
    return {};
  }
  const trace::JsonValue all = trace::ToJsonValue(root);
  const trace::JsonValue* findings = all.Find("findings");
  if (!findings) {
    ADD_FAILURE() << "no findings array: " << text;
    return {};
  }
  return findings->elements();
}

std::set<std::string> Serious(const std::vector<trace::JsonValue>& findings, bool timing) {
  std::set<std::string> out;
  for (const trace::JsonValue& f : findings) {
    const std::string severity = Str(f, "severity");
    if (!timing && Str(f, "kind") == "straggler") continue;
    if (severity != "info") out.insert(Str(f, "kind") + "/" + severity);
  }
  return out;
}

const trace::JsonValue* FindFinding(const std::vector<trace::JsonValue>& findings,
                                    const std::string& kind, const std::string& severity) {
  for (const trace::JsonValue& f : findings)
    if (Str(f, "kind") == kind && Str(f, "severity") == severity) return &f;
  ADD_FAILURE() << "no " << severity << " " << kind << " finding";
  return nullptr;
}

std::vector<int64_t> Ranks(const trace::JsonValue& finding) {
  std::vector<int64_t> out;
  for (const trace::JsonValue& r : Field(finding, "ranks").elements()) out.push_back(r.as_int());
  return out;
}

}  // namespace dsdiag::trainer_test
