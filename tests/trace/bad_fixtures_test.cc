// fixtures/bad: each run directory has a good rank 0 and a defective rank 1. The reader must
// read rank 0 cleanly and report rank 1's defect where fixtures/bad/README.md says it is.
#include <gtest/gtest.h>

#include "trace/record_types.h"
#include "trace/run_files.h"
#include "trace/trace_reader.h"

namespace dsdiag::trace {
namespace {

std::string FixturePath(const std::string& name, int rank) {
  return std::string(DSDIAG_SOURCE_DIR) + "/fixtures/bad/" + name + "/" + RankTraceFileName(rank);
}

struct Contents {
  std::optional<TraceHeader> header;
  std::vector<std::string> types;
  std::vector<LocatedIssue> issues;
  int64_t issue_count = 0;
  bool truncated = false;
};

Contents ReadFixture(const std::string& name, int rank) {
  Contents c;
  std::string error;
  auto r = TraceReader::Open(FixturePath(name, rank), &error);
  EXPECT_NE(r, nullptr) << error;
  if (!r) return c;
  c.header = r->ReadHeader();
  Record record;
  while (r->Next(&record)) c.types.emplace_back(record.type());
  c.issues = r->issues();
  c.issue_count = r->issue_count();
  c.truncated = r->saw_truncated_tail();
  return c;
}

const char* const kFixtures[] = {"empty",        "binary",     "garbage-line",    "truncated",
                                 "wrong-schema", "bad-fields", "header-not-first"};

TEST(BadFixtures, GoodRankReadsCleanly) {
  for (const char* name : kFixtures) {
    const Contents c = ReadFixture(name, 0);
    ASSERT_TRUE(c.header.has_value()) << name;
    EXPECT_EQ(c.header->run_id, std::string("fixture-") + name);
    EXPECT_EQ(c.header->world_size, 2);
    EXPECT_EQ(c.header->rank, 0);
    EXPECT_EQ(c.issue_count, 0) << name << ": " << (c.issues.empty() ? "" : c.issues[0].ToString());
    ASSERT_EQ(c.types.size(), 22u) << name;
    EXPECT_EQ(c.types.front(), rec::kStepBegin);
    EXPECT_EQ(c.types.back(), rec::kEnd);
  }
}

TEST(BadFixtures, Empty) {
  const Contents c = ReadFixture("empty", 1);
  EXPECT_FALSE(c.header.has_value());
  ASSERT_EQ(c.issue_count, 1);
  EXPECT_EQ(
      c.issues[0].ToString(),
      FixturePath("empty", 1) + ":1:1: expected a header record on line 1, found an empty file");
}

TEST(BadFixtures, Binary) {
  const Contents c = ReadFixture("binary", 1);
  EXPECT_FALSE(c.header.has_value());
  EXPECT_TRUE(c.types.empty());
  ASSERT_GE(c.issue_count, 1);
  EXPECT_EQ(c.issues[0].ToString(),
            FixturePath("binary", 1) + ":1:1: expected a JSON object ('{'), found byte 0x00");
}

TEST(BadFixtures, GarbageLine) {
  const Contents c = ReadFixture("garbage-line", 1);
  ASSERT_TRUE(c.header.has_value());
  EXPECT_EQ(c.header->rank, 1);
  EXPECT_EQ(c.types.size(), 22u);
  ASSERT_EQ(c.issue_count, 1);
  EXPECT_EQ(c.issues[0].line, 6);
  EXPECT_EQ(c.issues[0].column, 1);
  EXPECT_EQ(c.issues[0].expected, "a JSON object ('{')");
}

TEST(BadFixtures, Truncated) {
  const Contents c = ReadFixture("truncated", 1);
  ASSERT_TRUE(c.header.has_value());
  EXPECT_EQ(c.types.size(), 20u);
  EXPECT_NE(c.types.back(), rec::kEnd);
  EXPECT_TRUE(c.truncated);
  ASSERT_EQ(c.issue_count, 1);
  EXPECT_EQ(c.issues[0].line, 22);
  EXPECT_TRUE(c.issues[0].truncated_tail);
}

TEST(BadFixtures, WrongSchema) {
  const Contents c = ReadFixture("wrong-schema", 1);
  EXPECT_FALSE(c.header.has_value());
  EXPECT_EQ(c.types.size(), 22u);
  ASSERT_EQ(c.issue_count, 1);
  EXPECT_EQ(c.issues[0].line, 1);
  EXPECT_EQ(c.issues[0].column, 46);  // the value of "schema"
  EXPECT_EQ(c.issues[0].expected, "schema \"dsdiag.trace/5\" (major version 1 to 5)");
  EXPECT_EQ(c.issues[0].found, "'\"dsdiag.trace/9\"'");
}

TEST(BadFixtures, BadFields) {
  const Contents c = ReadFixture("bad-fields", 1);
  ASSERT_TRUE(c.header.has_value());
  EXPECT_EQ(c.types.size(), 22u - 6u);
  ASSERT_EQ(c.issue_count, 6);
  const std::vector<std::pair<int64_t, std::string>> want = {
      {3, "integer field \"ts\""}, {4, "integer field \"step\""}, {5, "string field \"type\""},
      {6, "integer field \"ts\""}, {7, "string field \"type\""},  {8, "a JSON object ('{')"}};
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(c.issues[i].line, want[i].first);
    EXPECT_EQ(c.issues[i].expected, want[i].second) << c.issues[i].ToString();
  }
  EXPECT_EQ(c.issues[3].column, 22);  // "ts":"…" on line 6
  EXPECT_EQ(c.issues[4].column, 9);   // "type":7 on line 7
}

TEST(BadFixtures, HeaderNotFirst) {
  const Contents c = ReadFixture("header-not-first", 1);
  EXPECT_FALSE(c.header.has_value());
  EXPECT_EQ(c.types.size(), 21u);  // the step_begin on line 1 is consumed as the bad header
  ASSERT_EQ(c.issue_count, 2);
  EXPECT_EQ(c.issues[0].line, 1);
  EXPECT_EQ(c.issues[0].expected, "a header record (\"type\":\"header\") on line 1");
  EXPECT_EQ(c.issues[1].line, 2);
  EXPECT_EQ(c.issues[1].expected, "an event record (a header belongs on line 1 only)");
}

}  // namespace
}  // namespace dsdiag::trace
