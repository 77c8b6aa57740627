// The header record: exact shape on the wire, the environment it records, and a full
// round trip writer -> file -> reader.
#include "trace/trace_header.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "tests/trace/test_util.h"
#include "trace/record_types.h"
#include "trace/trace_reader.h"
#include "trace/trace_writer.h"

namespace dsdiag::trace {
namespace {

using testing::TempDir;

TraceHeader SampleHeader() {
  TraceHeader h;
  h.schema = std::string(kSchema);
  h.run_id = "20261130-081500-4f2a";
  h.rank = 1;
  h.world_size = 4;
  h.local_rank = 1;
  h.host = "node7";
  h.pid = 4242;
  h.versions = {{"dsdiag", "0.1.0"}, {"libtorch", "1.13.1"}};
  h.env = {{"OMP_NUM_THREADS", "1"}, {"MASTER_ADDR", "127.0.0.1"}};
  h.config.Set("steps", 50);
  h.config.Set("amp", "off");
  h.config.Set("lr", 0.5);
  h.clock = {1200, 1796026500000000000, -35000, 12000};
  return h;
}

TEST(TraceHeader, WritesTheDocumentedShape) {
  TraceHeader h = SampleHeader();
  JsonValue determinism = JsonValue::Object();
  determinism.Set("cudnn_deterministic", true);
  h.sections.Set("determinism", determinism);
  std::string out;
  AppendHeaderRecord(h, 1200, &out);
  EXPECT_EQ(
      out, R"({"type":"header","ts":1200,"step":0,"schema":"dsdiag.trace/5",)"
           R"("run_id":"20261130-081500-4f2a","rank":1,"world_size":4,"local_rank":1,)"
           R"("host":"node7","pid":4242,"versions":{"dsdiag":"0.1.0","libtorch":"1.13.1"},)"
           R"("env":{"MASTER_ADDR":"127.0.0.1","OMP_NUM_THREADS":"1"},)"
           R"("config":{"steps":50,"amp":"off","lr":0.5},)"
           R"("clock":{"mono":1200,"wall":1796026500000000000,"offset":-35000,"offset_err":12000},)"
           R"("determinism":{"cudnn_deterministic":true}})"
           "\n");
}

TEST(TraceHeader, SectionsCannotShadowHeaderFields) {
  TraceHeader h = SampleHeader();
  h.sections.Set("rank", 99);
  h.sections.Set("loader", "ok");
  std::string out;
  AppendHeaderRecord(h, 0, &out);
  EXPECT_EQ(out.find("\"rank\":99"), std::string::npos);
  EXPECT_NE(out.find("\"loader\":\"ok\""), std::string::npos);
}

TEST(TraceHeader, EnvironmentKeysAndValuesAreEscaped) {
  TraceHeader h = SampleHeader();
  h.env = {{"NCCL_WEIRD\"NAME", "a\\b\n"}};
  std::string out;
  AppendHeaderRecord(h, 0, &out);
  EXPECT_NE(out.find(R"("env":{"NCCL_WEIRD\"NAME":"a\\b\n"})"), std::string::npos) << out;
}

// Section names are not dsdiag literals: a header read from a file keeps whatever keys it had,
// and writing it back must still give one valid line (found by fuzz/trace_reader_fuzzer).
TEST(TraceHeader, SectionNamesAreEscaped) {
  TraceHeader h = SampleHeader();
  h.sections.Set("we\"ird\\ns\n", 1);
  std::string out;
  AppendHeaderRecord(h, 0, &out);
  EXPECT_NE(out.find(R"("we\"ird\\ns\n":1})"), std::string::npos) << out;
  EXPECT_EQ(out.find('\n'), out.size() - 1) << out;

  TempDir dir;
  testing::WriteFile(dir.File("rank-00001.jsonl"), out);
  std::string error;
  auto reader = TraceReader::Open(dir.File("rank-00001.jsonl"), &error);
  ASSERT_NE(reader, nullptr) << error;
  const std::optional<TraceHeader>& got = reader->ReadHeader();
  ASSERT_TRUE(got.has_value()) << reader->issues().front().ToString();
  ASSERT_EQ(got->sections.members().size(), 1u);
  EXPECT_EQ(got->sections.members()[0].first, "we\"ird\\ns\n");
}

TEST(TraceHeader, CollectsOnlyRelevantEnvironment) {
  setenv("NCCL_DEBUG", "INFO", 1);
  setenv("OMP_NUM_THREADS", "3", 1);
  setenv("MASTER_PORT", "29500", 1);
  setenv("SLURM_JOB_ID", "77", 1);
  setenv("DSDIAG_TEST_UNRELATED", "x", 1);
  setenv("MY_NCCL_DEBUG", "x", 1);
  const auto env = CollectRelevantEnv();
  EXPECT_EQ(env.at("NCCL_DEBUG"), "INFO");
  EXPECT_EQ(env.at("OMP_NUM_THREADS"), "3");
  EXPECT_EQ(env.at("MASTER_PORT"), "29500");
  EXPECT_EQ(env.at("SLURM_JOB_ID"), "77");
  EXPECT_EQ(env.count("DSDIAG_TEST_UNRELATED"), 0u);
  EXPECT_EQ(env.count("MY_NCCL_DEBUG"), 0u);
  EXPECT_EQ(env.count("PATH"), 0u);
  unsetenv("DSDIAG_TEST_UNRELATED");
  unsetenv("MY_NCCL_DEBUG");
}

TEST(TraceHeader, RoundTripsThroughWriterAndReader) {
  TempDir dir;
  const std::string path = dir.File("rank-00001.jsonl");
  TraceHeader h = SampleHeader();
  JsonValue loader = JsonValue::Object();
  loader.Set("workers", 4);
  h.sections.Set("loader", loader);
  {
    std::string error;
    auto w = TraceWriter::Open(path, {size_t{1} << 20, 0}, &error);
    ASSERT_NE(w, nullptr) << error;
    w->WriteHeader(h);
    w->Begin(rec::kEnd).line().Field("reason", "ok").Field("status", 0);
  }
  std::string error;
  auto r = TraceReader::Open(path, &error);
  ASSERT_NE(r, nullptr) << error;
  const std::optional<TraceHeader>& got = r->ReadHeader();
  ASSERT_TRUE(got.has_value()) << (r->issues().empty() ? "" : r->issues()[0].ToString());
  EXPECT_EQ(got->schema, h.schema);
  EXPECT_EQ(got->run_id, h.run_id);
  EXPECT_EQ(got->rank, 1);
  EXPECT_EQ(got->world_size, 4);
  EXPECT_EQ(got->local_rank, 1);
  EXPECT_EQ(got->host, "node7");
  EXPECT_EQ(got->pid, 4242);
  EXPECT_EQ(got->versions, h.versions);
  EXPECT_EQ(got->env, h.env);
  EXPECT_EQ(got->config, h.config);
  EXPECT_EQ(got->clock.mono_ns, 1200);
  EXPECT_EQ(got->clock.wall_ns, 1796026500000000000);
  EXPECT_EQ(got->clock.offset_ns, -35000);
  EXPECT_EQ(got->clock.offset_err_ns, 12000);
  ASSERT_EQ(got->sections.members().size(), 1u);
  EXPECT_EQ(got->sections.members()[0].first, "loader");
  EXPECT_EQ(got->sections.members()[0].second, loader);
  Record record;
  ASSERT_TRUE(r->Next(&record));
  EXPECT_EQ(record.type(), rec::kEnd);
  EXPECT_FALSE(r->Next(&record));
  EXPECT_EQ(r->issue_count(), 0);
}

}  // namespace
}  // namespace dsdiag::trace
