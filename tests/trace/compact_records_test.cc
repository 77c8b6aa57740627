// Trace format v2's compact records (trace/compact_records.h) read back as the v1 records
// they stand for: `colls` as one `coll` per op, a step's "pre_step_fp" as the pre-step `fp`
// records, "coll":{"wait"} with its sums; ill-formed ones as issues naming their line; v1
// traces untouched; the same records whether or not the reader is suspended in between.
// Format v3's arrays (a step's per-phase times, a colls record's gaps) read back as v2's form.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "tests/trace/test_util.h"
#include "trace/reader_pool.h"
#include "trace/record_types.h"
#include "trace/records/colls_record.h"
#include "trace/records/phase_record.h"
#include "trace/records/record_line.h"
#include "trace/records/step_record.h"
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
  EXPECT_NE(r.issues[1].expected.find("\"dur_us\" of one integer per op"), std::string::npos)
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

std::string AsVersion(std::string text, char major) {
  text.replace(text.find("dsdiag.trace/2"), 14, std::string("dsdiag.trace/") + major);
  return text;
}

std::string AsVersion3(std::string text) { return AsVersion(std::move(text), '3'); }

TEST(CompactRecords, Version3GapsReadBackAsVersion2Offsets) {
  // kTwoSteps' colls record (at_us [0,3], dur_us [2,5]) as v3 writes it: the second op
  // issued 1 µs after the first completed.
  std::string v3 = AsVersion3(kTwoSteps);
  v3.replace(v3.find(R"("at_us":[0,3])"), 13, R"("gap_us":[1])");
  const Read r2 = ReadAll(kTwoSteps), r3 = ReadAll(v3);
  ASSERT_TRUE(r3.issues.empty()) << r3.issues[0].ToString();
  EXPECT_EQ(r3.raw, r2.raw);
  EXPECT_EQ(r3.lines, r2.lines);
}

TEST(CompactRecords, TheCollsWriterWritesGapsThatReadBackAsItsOffsets) {
  records::CollsRecord colls;
  colls.seq = 2;
  colls.at_us = {0, 3};
  colls.dur_us = {2, 5};
  std::string line;
  records::AppendRecordLine(colls, records::At{5000, 1}, &line);
  EXPECT_EQ(line,
            R"({"type":"colls","ts":5000,"step":1,"pg":0,"seq":2,"gap_us":[1],"dur_us":[2,5]})"
            "\n");
  std::string v3 = AsVersion3(kTwoSteps);
  const size_t at = v3.find(R"({"type":"colls")");
  v3.replace(at, v3.find('\n', at) + 1 - at, line);
  EXPECT_EQ(ReadAll(v3).raw, ReadAll(kTwoSteps).raw);
}

// A step as the session fills it: every phase in order, 0 where it took no time; one time
// that is not whole µs (backward) and one under a µs (runq's forward).
std::string StepLine(bool phase_objects) {
  static const records::PhaseTime phases[] = {{phase::kData, 10000},     {phase::kForward, 20000},
                                              {phase::kBackward, 30500}, {phase::kSync, 0},
                                              {phase::kOptimizer, 5000}, {phase::kCheckpoint, 0}};
  static const records::PhaseTime cpu[] = {{phase::kData, 9000},      {phase::kForward, 19000},
                                           {phase::kBackward, 25000}, {phase::kSync, 0},
                                           {phase::kOptimizer, 4000}, {phase::kCheckpoint, 0}};
  static const records::PhaseTime runq[] = {{phase::kData, 0},      {phase::kForward, 1},
                                            {phase::kBackward, 0},  {phase::kSync, 0},
                                            {phase::kOptimizer, 0}, {phase::kCheckpoint, 0}};
  records::StepRecord step;
  step.dur = 100;
  step.phases = phases;
  step.cpu = cpu;
  step.runq = runq;
  step.phase_count = 6;
  step.probe_ns = 1;
  step.phase_objects = phase_objects;
  std::string line;
  records::AppendRecordLine(step, records::At{4000, 1}, &line);
  return line;
}

TEST(CompactRecords, Version4StepArraysOfMicrosecondsReadBackAsObjectsOfNanoseconds) {
  const std::string v4 = StepLine(false);
  // Whole µs, each nonzero time rounded up: 30.5 µs is 31, 1 ns is 1 µs (still a time).
  EXPECT_NE(v4.find(R"("phases_us":[10,20,31,0,5],)"), std::string::npos) << v4;
  EXPECT_NE(v4.find(R"("cpu_us":[9,19,25,0,4],"runq_us":[0,1])"), std::string::npos) << v4;
  const Read r = ReadAll(AsVersion(kHeaderV2, '4') + "\n" + v4);
  ASSERT_TRUE(r.issues.empty()) << r.issues[0].ToString();
  ASSERT_EQ(r.raw.size(), 1u);
  EXPECT_EQ(
      r.raw[0],
      R"({"type":"step","ts":4000,"step":1,"dur":100,"epoch":0,"samples":0,"phases":{"data":10000,"forward":20000,"backward":31000,"optimizer":5000},"probe_ns":1,"cpu":{"data":9000,"forward":19000,"backward":25000,"optimizer":4000},"runq":{"forward":1000}})");
  // With the other compact members of a light-mode step around them.
  std::string text = AsVersion(kTwoSteps, '4');
  text.replace(text.find(R"("coll":{"wait":77})"), 0, R"("phases_us":[0,0,7],)");
  const Read both = ReadAll(text);
  ASSERT_TRUE(both.issues.empty()) << both.issues[0].ToString();
  EXPECT_EQ(
      both.raw.back(),
      R"({"type":"step","ts":4000,"step":1,"dur":9000,"phases":{"backward":7000},"coll":{"n":2,"bytes":1200,"dur":7000,"wait":77},"probe_ns":1})");
}

TEST(CompactRecords, Version3StepArraysOfNanosecondsReadBackAsVersion2Objects) {
  // StepLine's step as version 3 wrote it: arrays of ns, every digit kept.
  const std::string v2 = StepLine(true);
  std::string v3 = StepLine(false);
  v3.replace(v3.find(R"("phases_us":[10,20,31,0,5])"), 26,
             R"("phases":[10000,20000,30500,0,5000])");
  v3.replace(v3.find(R"("cpu_us":[9,19,25,0,4],"runq_us":[0,1])"), 38,
             R"("cpu":[9000,19000,25000,0,4000],"runq":[0,1])");
  EXPECT_NE(
      v2.find(R"("phases":{"data":10000,"forward":20000,"backward":30500,"optimizer":5000},)"),
      std::string::npos)
      << v2;
  const Read r = ReadAll(AsVersion3(kHeaderV2) + "\n" + v3);
  ASSERT_TRUE(r.issues.empty()) << r.issues[0].ToString();
  ASSERT_EQ(r.raw.size(), 1u);
  EXPECT_EQ(r.raw[0] + "\n", v2);
}

TEST(CompactRecords, AStepArrayLongerThanThePhaseOrderIsAnIssue) {
  const std::string text = AsVersion3(kHeaderV2) + "\n" +
                           R"({"type":"step","ts":4000,"step":1,"dur":9,"phases":[1,2,3,4,5,6,7]})"
                           "\n";
  const Read r = ReadAll(text);
  ASSERT_EQ(r.issues.size(), 1u);
  EXPECT_EQ(r.issues[0].line, 2);
  EXPECT_NE(r.issues[0].expected.find("\"phases\" is an object or an array of at most 6"),
            std::string::npos)
      << r.issues[0].ToString();
  ASSERT_EQ(r.raw.size(), 1u);  // the step is still read, without phases
}

TEST(CompactRecords, StepsLeaveOutWhatDidNotChangeAndReadBackWhole) {
  records::StepRecord steps[3];
  steps[0].epoch = 0, steps[0].lr = 0.1, steps[0].samples = 8, steps[0].load = 0.5;
  steps[1] = steps[0];
  steps[1].load = 0.6;  // the host's load moved
  steps[2] = steps[1];
  steps[2].epoch = 1, steps[2].lr = NAN;  // a new epoch; lr no longer known
  std::string text = AsVersion(kHeaderV2, '4') + "\n";
  records::StepRepeats previous;
  std::vector<std::string> written;
  for (int i = 0; i < 3; ++i) {
    steps[i].previous = &previous;
    std::string line;
    records::AppendRecordLine(steps[i], records::At{1000 * (i + 1), i}, &line);
    previous = records::RepeatsOf(steps[i]);
    written.push_back(line);
    text += line;
  }
  EXPECT_NE(written[0].find(R"("epoch":0,"lr":0.1,"samples":8,"phases_us":[],"load":0.5})"),
            std::string::npos)
      << written[0];
  EXPECT_NE(written[1].find(R"("dur":0,"phases_us":[],"load":0.6})"), std::string::npos)
      << written[1];
  EXPECT_NE(written[2].find(R"("dur":0,"epoch":1,"lr":null,"phases_us":[]})"), std::string::npos)
      << written[2];
  const Read r = ReadAll(text);
  ASSERT_TRUE(r.issues.empty()) << r.issues[0].ToString();
  ASSERT_EQ(r.raw.size(), 3u);
  EXPECT_EQ(
      r.raw[0],
      R"({"type":"step","ts":1000,"step":0,"dur":0,"epoch":0,"lr":0.1,"samples":8,"phases":{},"load":0.5})");
  EXPECT_EQ(
      r.raw[1],
      R"({"type":"step","ts":2000,"step":1,"dur":0,"phases":{},"load":0.6,"epoch":0,"lr":0.1,"samples":8})");
  EXPECT_EQ(
      r.raw[2],
      R"({"type":"step","ts":3000,"step":2,"dur":0,"epoch":1,"phases":{},"samples":8,"load":0.6})");
  // In a v2 trace a member left out is unknown: nothing is put back.
  std::string v2 = text;
  v2.replace(v2.find("dsdiag.trace/4"), 14, "dsdiag.trace/2");
  const Read r2 = ReadAll(v2);
  ASSERT_EQ(r2.raw.size(), 3u);
  EXPECT_EQ(r2.raw[1].find("\"epoch\""), std::string::npos) << r2.raw[1];
}

}  // namespace
}  // namespace dsdiag::trace
