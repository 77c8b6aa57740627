#include "analyzers/output/findings_output.h"

#include <gtest/gtest.h>
#include <simdjson.h>

namespace dsdiag::analyzers {
namespace {

CompareResult Sample() {
  CompareResult r;
  r.run.dir = "runs/x";
  r.run.run_id = "rid";
  r.run.world_size = 4;
  r.run.ranks_found = {0, 1, 3};
  r.run.ranks_missing = {2};
  r.run.steps = 7;
  r.stats.files = 3;
  r.stats.records = 120;
  Finding died;
  died.kind = "rank-died";
  died.severity = Severity::kError;
  died.ranks = {2};
  died.summary = "rank 2 has no trace";
  died.evidence.Set("world_size", 4);
  died.hint = "look at the launcher";
  Finding env;
  env.kind = "config-mismatch";
  env.severity = Severity::kWarning;
  env.ranks = {1};
  env.step = 3;
  env.subject = "env.NCCL_DEBUG \"quoted\"";
  env.summary = "differs";
  trace::JsonValue values = trace::JsonValue::Array();
  trace::JsonValue v = trace::JsonValue::Object();
  v.Set("value", "INFO");
  v.Set("ranks", trace::JsonValue::Array());
  values.Push(v);
  env.evidence.Set("values", values);
  Finding info;
  info.kind = "trace-corrupt";
  info.severity = Severity::kInfo;
  info.ranks = {3};
  info.summary = "tail";
  r.findings = {died, env, info};
  return r;
}

TEST(FindingsOutputTest, JsonHasTheContractShape) {
  const std::string json = FindingsToJson(Sample());
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(json).get(doc), simdjson::SUCCESS) << json;
  EXPECT_EQ(std::string_view(doc["schema"].get_string().value()), "dsdiag.findings/1");
  simdjson::dom::object run = doc["run"].get_object().value();
  EXPECT_EQ(std::string_view(run["dir"].get_string().value()), "runs/x");
  EXPECT_EQ(int64_t(run["world_size"].get_int64().value()), 4);
  EXPECT_EQ(int64_t(run["steps"].get_int64().value()), 7);
  EXPECT_EQ(run["ranks_found"].get_array().value().size(), 3u);
  EXPECT_EQ(int64_t(doc["counts"]["error"].get_int64().value()), 1);

  simdjson::dom::array findings = doc["findings"].get_array().value();
  ASSERT_EQ(findings.size(), 3u);
  simdjson::dom::element first = findings.at(0).value();
  for (const char* key :
       {"kind", "severity", "ranks", "step", "subject", "summary", "evidence", "hint"})
    EXPECT_TRUE(first[key].error() == simdjson::SUCCESS) << key;
  EXPECT_EQ(std::string_view(first["severity"].get_string().value()), "error");
  EXPECT_TRUE(first["step"].is_null());
  EXPECT_TRUE(first["subject"].is_null());
  EXPECT_TRUE(first["evidence"].is_object());
  simdjson::dom::element second = findings.at(1).value();
  EXPECT_EQ(int64_t(second["step"].get_int64().value()), 3);
  EXPECT_EQ(std::string_view(second["subject"].get_string().value()), "env.NCCL_DEBUG \"quoted\"");
}

TEST(FindingsOutputTest, MinSeverityFiltersTheListButNotTheCounts) {
  OutputOptions options;
  options.min_severity = Severity::kWarning;
  const std::string json = FindingsToJson(Sample(), options);
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(json).get(doc), simdjson::SUCCESS) << json;
  EXPECT_EQ(doc["findings"].get_array().value().size(), 2u);
  EXPECT_EQ(int64_t(doc["counts"]["info"].get_int64().value()), 1);

  const std::string text = FindingsToText(Sample(), options);
  EXPECT_EQ(text.find("trace-corrupt"), std::string::npos) << text;
  EXPECT_NE(text.find("showing warning and above"), std::string::npos) << text;
}

TEST(FindingsOutputTest, EmptyFindingsIsStillValidJson) {
  CompareResult r = Sample();
  r.findings.clear();
  const std::string json = FindingsToJson(r);
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(json).get(doc), simdjson::SUCCESS) << json;
  EXPECT_EQ(doc["findings"].get_array().value().size(), 0u);
}

TEST(FindingsOutputTest, TextIsPlainUnlessColourIsAsked) {
  const std::string plain = FindingsToText(Sample());
  EXPECT_EQ(plain.find('\x1b'), std::string::npos);
  EXPECT_NE(plain.find("runs/x"), std::string::npos);
  EXPECT_NE(plain.find("ranks missing  2"), std::string::npos) << plain;
  EXPECT_NE(plain.find("1 error, 1 warning, 1 info"), std::string::npos) << plain;
  EXPECT_NE(plain.find("[1] ERROR  rank-died"), std::string::npos) << plain;
  EXPECT_NE(plain.find("look at the launcher"), std::string::npos);
  EXPECT_NE(plain.find("- value: INFO  ranks: []"), std::string::npos) << plain;

  OutputOptions options;
  options.color = true;
  const std::string colored = FindingsToText(Sample(), options);
  EXPECT_NE(colored.find("\x1b[1;31m"), std::string::npos);
}

TEST(FindingsOutputTest, TableColumnsAreAligned) {
  const std::string text = FindingsToText(Sample());
  // Every table row puts the kind at the same column as the header's "kind".
  const size_t head = text.find("  #  ");
  ASSERT_NE(head, std::string::npos) << text;
  const size_t line_start = head;
  const size_t kind_col = text.find("kind", head) - line_start;
  size_t pos = text.find('\n', head) + 1;
  for (const char* kind : {"rank-died", "config-mismatch", "trace-corrupt"}) {
    const size_t eol = text.find('\n', pos);
    EXPECT_EQ(text.find(kind, pos) - pos, kind_col) << text.substr(pos, eol - pos);
    pos = eol + 1;
  }
}

}  // namespace
}  // namespace dsdiag::analyzers
