// Trace format v2's compact records (trace/compact_records.h) read back as the v1 records
// they stand for: `colls` as one `coll` per op, a step's "pre_step_fp" as the pre-step `fp`
// records, "coll":{"wait"} with its sums; ill-formed ones as issues naming their line; v1
// traces untouched; the same records whether or not the reader is suspended in between.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/trace/test_util.h"
#include "trace/reader_pool.h"
#include "trace/trace_reader.h"

namespace dsdiag::trace {
namespace {

using testing::TempDir;

constexpr char kHeaderV2[] =
    R"({"type":"header","ts":1,"step":0,"schema":"dsdiag.trace/2","run_id":"r","rank":0,"world_size":2})";

std::string Coll(int64_t ts, int64_t step, int64_t seq, const char* tag, int64_t bytes) {
  return R"({"type":"coll","ts":)" + std::to_string(ts) + R"(,"step":)" + std::to_string(step) +
         R"(,"pg":0,"seq":)" + std::to_string(seq) + R"(,"op":"allreduce","dtype":"f32","n":)" +
         std::to_string(bytes / 4) + R"(,"bytes":)" + std::to_string(bytes) +
         R"(,"dur":2000,"tag":")" + tag + R"("})";
}

struct Read {
  std::vector<std::string> raw;
  std::vector<int64_t> lines;
  std::vector<LocatedIssue> issues;
};

Read ReadAll(const std::string& text, bool suspend_each = false) {
  TempDir dir;
  auto reader = testing::OpenTraceText(dir, text);
  Read out;
  if (!reader) return out;
  ReaderPool pool;
  Record r;
  std::string last;
  while (reader->Next(&r)) {
    if (suspend_each && std::string(r.raw_line()) != last && reader->Suspend(&pool, true)) {
      last = std::string(r.raw_line());
      reader->Resume(&pool);
      continue;  // the record comes again
    }
    last.clear();
    out.raw.emplace_back(r.raw_line());
    out.lines.push_back(r.line());
  }
  out.issues = reader->issues();
  return out;
}

// Two steps of two ops, the second as `colls`.
const std::string kTwoSteps =
    std::string(kHeaderV2) + "\n" + Coll(100, 0, 0, "b0", 400) + "\n" + Coll(200, 0, 1, "b1", 800) +
    "\n" +
    R"({"type":"colls","ts":5000,"step":1,"pg":0,"seq":2,"at_us":[0,3],"dur_us":[2,5]})"
    "\n" +
    R"({"type":"step","ts":4000,"step":1,"dur":9000,"coll":{"wait":77},"probe_ns":1})"
    "\n";

TEST(CompactRecords, CollsBecomeOneCollPerOpWithThePreviousStepsOps) {
  const Read r = ReadAll(kTwoSteps);
  ASSERT_TRUE(r.issues.empty()) << r.issues[0].ToString();
  ASSERT_EQ(r.raw.size(), 5u);
  EXPECT_EQ(
      r.raw[2],
      R"({"type":"coll","ts":5000,"step":1,"pg":0,"seq":2,"op":"allreduce","dtype":"f32","n":100,"bytes":400,"dur":2000,"tag":"b0"})");
  EXPECT_EQ(
      r.raw[3],
      R"({"type":"coll","ts":8000,"step":1,"pg":0,"seq":3,"op":"allreduce","dtype":"f32","n":200,"bytes":800,"dur":5000,"tag":"b1"})");
  // The step's totals, summed from its colls record.
  EXPECT_EQ(
      r.raw[4],
      R"({"type":"step","ts":4000,"step":1,"dur":9000,"coll":{"n":2,"bytes":1200,"dur":7000,"wait":77},"probe_ns":1})");
  EXPECT_EQ(r.lines, (std::vector<int64_t>{2, 3, 4, 4, 5}));
}

TEST(CompactRecords, AStepWithMoreOpsDoesNotBreakTheRunOfTheOthers) {
  // Step 1 adds a health check; step 2 repeats step 0's two ops, step 3 step 1's three.
  const std::string text =
      std::string(kHeaderV2) + "\n" + Coll(100, 0, 0, "b0", 400) + "\n" +
      Coll(200, 0, 1, "b1", 800) + "\n" + Coll(300, 1, 2, "b0", 400) + "\n" +
      Coll(400, 1, 3, "b1", 800) + "\n" + Coll(500, 1, 4, "health", 4) + "\n" +
      R"({"type":"colls","ts":600,"step":2,"pg":0,"seq":5,"at_us":[0,1],"dur_us":[2,2]})"
      "\n" +
      R"({"type":"colls","ts":900,"step":3,"pg":0,"seq":7,"at_us":[0,1,2],"dur_us":[2,2,2]})"
      "\n";
  const Read r = ReadAll(text);
  ASSERT_TRUE(r.issues.empty()) << r.issues[0].ToString();
  ASSERT_EQ(r.raw.size(), 10u);
  EXPECT_NE(r.raw[6].find(R"("seq":6,"op":"allreduce","dtype":"f32","n":200,"bytes":800)"),
            std::string::npos)
      << r.raw[6];
  EXPECT_NE(r.raw[9].find(R"("seq":9,"op":"allreduce","dtype":"f32","n":1,"bytes":4)"),
            std::string::npos)
      << r.raw[9];
  EXPECT_NE(r.raw[9].find(R"("tag":"health")"), std::string::npos);
}

TEST(CompactRecords, LeftOutPreStepFingerprintsComeBackBeforeTheirStep) {
  const std::string text =
      std::string(kHeaderV2) + "\n" +
      R"({"type":"fp","ts":10,"step":0,"what":"param","why":"periodic","gran":"bucket","h":["00000000000000aa"]})"
      "\n" +
      R"({"type":"fp","ts":20,"step":1,"what":"grad","why":"after-sync","gran":"bucket","h":["00000000000000bb"]})"
      "\n" +
      R"({"type":"step","ts":15,"step":1,"dur":100,"pre_step_fp":"grad,param","probe_ns":1})"
      "\n" +
      R"({"type":"fp","ts":30,"step":2,"what":"grad","why":"pre-step","same":"after-sync"})"
      "\n";
  const Read r = ReadAll(text);
  ASSERT_TRUE(r.issues.empty()) << r.issues[0].ToString();
  ASSERT_EQ(r.raw.size(), 6u);
  EXPECT_EQ(
      r.raw[2],
      R"({"type":"fp","ts":115,"step":1,"what":"grad","why":"pre-step","gran":"bucket","h":["00000000000000bb"]})");
  EXPECT_EQ(
      r.raw[3],
      R"({"type":"fp","ts":115,"step":1,"what":"param","why":"pre-step","gran":"bucket","h":["00000000000000aa"]})");
  EXPECT_EQ(r.raw[4], R"({"type":"step","ts":15,"step":1,"dur":100,"probe_ns":1})");
  EXPECT_EQ(
      r.raw[5],
      R"({"type":"fp","ts":30,"step":2,"what":"grad","why":"pre-step","gran":"bucket","h":["00000000000000bb"]})");
}

// A device fingerprint's `fn` sits between `gran` and `h`: a left-out pre-step record comes
// back with it, so that it is compared with device fingerprints only.
TEST(CompactRecords, ALeftOutDeviceFingerprintComesBackWithItsFunction) {
  const std::string text =
      std::string(kHeaderV2) + "\n" +
      R"({"type":"fp","ts":20,"step":1,"what":"grad","why":"after-sync","gran":"param","fn":"dsum","h":["00000000000000bb"]})"
      "\n" +
      R"({"type":"step","ts":25,"step":1,"dur":100,"pre_step_fp":"grad","probe_ns":1})"
      "\n";
  const Read r = ReadAll(text);
  ASSERT_TRUE(r.issues.empty()) << r.issues[0].ToString();
  ASSERT_EQ(r.raw.size(), 3u);
  EXPECT_EQ(
      r.raw[1],
      R"({"type":"fp","ts":125,"step":1,"what":"grad","why":"pre-step","gran":"param","fn":"dsum","h":["00000000000000bb"]})");
}

TEST(CompactRecords, IllFormedCompactRecordsAreIssuesOnTheirLine) {
  const std::string text =
      std::string(kHeaderV2) + "\n" +
      R"({"type":"colls","ts":5,"step":1,"pg":0,"seq":2,"at_us":[0],"dur_us":[2]})"
      "\n" +
      Coll(100, 1, 0, "b0", 400) + "\n" +
      R"({"type":"colls","ts":5,"step":2,"pg":0,"seq":2,"at_us":[0,1],"dur_us":[2]})"
      "\n" +
      R"({"type":"step","ts":15,"step":2,"dur":100,"pre_step_fp":"param","probe_ns":1})"
      "\n";
  const Read r = ReadAll(text);
  ASSERT_EQ(r.issues.size(), 3u);
  EXPECT_EQ(r.issues[0].line, 2);
  EXPECT_NE(r.issues[0].expected.find("repeating an earlier step of 1 collectives on group 0"),
            std::string::npos)
      << r.issues[0].ToString();
  EXPECT_EQ(r.issues[1].line, 4);
  EXPECT_NE(r.issues[1].expected.find("\"at_us\", \"dur_us\" of one integer per op"),
            std::string::npos)
      << r.issues[1].ToString();
  EXPECT_EQ(r.issues[2].line, 5);
  EXPECT_NE(r.issues[2].expected.find("no param one"), std::string::npos) << r.issues[2].ToString();
  // The coll record and the step itself are still read.
  ASSERT_EQ(r.raw.size(), 2u);
  EXPECT_EQ(r.raw[1], R"({"type":"step","ts":15,"step":2,"dur":100,"probe_ns":1})");
}

TEST(CompactRecords, AVersion1TraceIsReadAsWritten) {
  std::string text = kTwoSteps;
  text.replace(text.find("dsdiag.trace/2"), 14, "dsdiag.trace/1");
  const Read r = ReadAll(text);
  ASSERT_TRUE(r.issues.empty());
  ASSERT_EQ(r.raw.size(), 4u);  // a colls record is just an unknown type to v1
  EXPECT_NE(r.raw[2].find("\"type\":\"colls\""), std::string::npos);
}

TEST(CompactRecords, ASuspendedReaderExpandsAsOneNeverSuspended) {
  const std::string text =
      kTwoSteps +
      R"({"type":"colls","ts":9000,"step":2,"pg":0,"seq":4,"at_us":[0,3],"dur_us":[2,5]})"
      "\n" +
      R"({"type":"fp","ts":9500,"step":2,"what":"grad","why":"after-sync","gran":"bucket","h":["00000000000000bb"]})"
      "\n" +
      R"({"type":"step","ts":9000,"step":2,"dur":900,"coll":{"wait":7},"pre_step_fp":"grad","probe_ns":1})"
      "\n";
  const Read plain = ReadAll(text);
  const Read suspended = ReadAll(text, /*suspend_each=*/true);
  ASSERT_TRUE(plain.issues.empty()) << plain.issues[0].ToString();
  EXPECT_TRUE(suspended.issues.empty()) << suspended.issues[0].ToString();
  EXPECT_EQ(suspended.raw, plain.raw);
  EXPECT_EQ(suspended.lines, plain.lines);
  EXPECT_EQ(plain.raw.size(), 10u);
}

}  // namespace
}  // namespace dsdiag::trace
