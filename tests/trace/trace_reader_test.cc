// TraceReader: the good path (fields, accessors, chunk boundaries) and every kind of bad
// input, each checked for the line, column and expectation it reports.
#include "trace/trace_reader.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <random>

#include "tests/trace/test_util.h"
#include "trace/line_reader.h"
#include "trace/record_types.h"
#include "trace/trace_writer.h"

namespace dsdiag::trace {
namespace {

using testing::kHeader;
using testing::TempDir;
using testing::WriteFile;

struct ReadAllResult {
  std::optional<TraceHeader> header;
  std::vector<std::string> types;
  std::vector<int64_t> lines;  // line number of each record
  std::vector<LocatedIssue> issues;
  int64_t issue_count = 0;
  bool truncated = false;
  int64_t lines_read = 0;
};

ReadAllResult ReadAll(const std::string& path) {
  ReadAllResult out;
  std::string error;
  auto r = TraceReader::Open(path, &error);
  EXPECT_NE(r, nullptr) << error;
  if (!r) return out;
  Record record;
  while (r->Next(&record)) {
    out.types.emplace_back(record.type());
    out.lines.push_back(record.line());
  }
  out.header = r->header();
  out.issues = r->issues();
  out.issue_count = r->issue_count();
  out.truncated = r->saw_truncated_tail();
  out.lines_read = r->lines_read();
  return out;
}

class ReaderTest : public ::testing::Test {
 protected:
  // Writes `text` as the trace and reads it back whole.
  ReadAllResult Read(const std::string& text) {
    WriteFile(path_, text);
    return ReadAll(path_);
  }
  // A file of the standard header followed by `lines`, each with its '\n'.
  ReadAllResult ReadLines(const std::vector<std::string>& lines) {
    std::string text = std::string(kHeader) + "\n";
    for (const std::string& l : lines) text += l + "\n";
    return Read(text);
  }
  void ExpectIssue(const LocatedIssue& issue, int64_t line, int64_t column,
                   const std::string& expected, const std::string& found = "") {
    EXPECT_EQ(issue.file, path_);
    EXPECT_EQ(issue.line, line) << issue.ToString();
    EXPECT_EQ(issue.column, column) << issue.ToString();
    EXPECT_EQ(issue.expected, expected) << issue.ToString();
    if (!found.empty()) {
      EXPECT_EQ(issue.found, found) << issue.ToString();
    }
  }

  TempDir dir_;
  const std::string path_ = dir_.File("rank-00001.jsonl");
};

// ---- good input ----

TEST_F(ReaderTest, ReadsWhatTheWriterWrites) {
  {
    std::string error;
    auto w = TraceWriter::Open(path_, {4096, 0}, &error);
    ASSERT_NE(w, nullptr) << error;
    TraceHeader h;
    h.schema = std::string(kSchema);
    h.run_id = "rt";
    w->WriteHeader(h);
    w->SetStep(3);
    auto r = w->BeginAt(rec::kStep, 5000);
    r.line().Field("dur", int64_t{41000000}).Field("loss", 2.31).Field("samples", 32);
    r.line().Field("ok", true).Field("name", "a\"b").Hex("h", 0x9f3c000000000001u);
    r.line().BeginObject("phases").Field("data", 1200000).EndObject();
    r.line().BeginArray("idx").Add(1).Add(2).Add(3).EndArray();
    r.Commit();
    w->Begin(rec::kEnd).line().Field("reason", "ok");
  }
  std::string error;
  auto reader = TraceReader::Open(path_, &error);
  ASSERT_NE(reader, nullptr) << error;
  Record r;
  ASSERT_TRUE(reader->Next(&r));  // the header is not an event
  EXPECT_TRUE(reader->header().has_value());
  EXPECT_EQ(r.type(), rec::kStep);
  EXPECT_EQ(r.ts(), 5000);
  EXPECT_EQ(r.step(), 3);
  EXPECT_EQ(r.tid(), 0);
  EXPECT_EQ(r.line(), 2);
  EXPECT_EQ(r.Int("dur"), 41000000);
  EXPECT_EQ(r.Double("loss"), 2.31);
  EXPECT_EQ(r.Double("samples"), 32.0);  // ints convert
  EXPECT_EQ(r.Int("loss"), std::nullopt);
  EXPECT_EQ(r.Bool("ok"), true);
  EXPECT_EQ(r.Str("name"), "a\"b");
  EXPECT_EQ(r.Hex("h"), 0x9f3c000000000001u);
  EXPECT_EQ(r.Hex("name"), std::nullopt);
  EXPECT_TRUE(r.Has("phases"));
  EXPECT_FALSE(r.Has("nope"));
  EXPECT_EQ(r.Str("nope"), std::nullopt);
  const std::optional<JsonValue> phases = r.Value("phases");
  ASSERT_TRUE(phases.has_value());
  EXPECT_EQ(phases->Find("data")->as_int(), 1200000);
  simdjson::dom::array idx;
  ASSERT_EQ(r.object()["idx"].get_array().get(idx), simdjson::SUCCESS);
  EXPECT_EQ(idx.size(), 3u);
  EXPECT_EQ(r.raw_line().substr(0, 15), R"({"type":"step",)");
  ASSERT_TRUE(reader->Next(&r));
  EXPECT_EQ(r.type(), rec::kEnd);
  EXPECT_FALSE(reader->Next(&r));
  EXPECT_FALSE(reader->Next(&r));
  EXPECT_EQ(reader->issue_count(), 0);
  EXPECT_EQ(reader->lines_read(), 3);
  EXPECT_GT(reader->bytes_read(), 100);
}

TEST_F(ReaderTest, HexRejectsWrongLengthAndDigits) {
  WriteFile(
      path_,
      std::string(kHeader) + "\n" +
          R"({"type":"fp","ts":1,"step":0,"a":"00000000000000ff","b":"ff","c":"zz00000000000000","d":"FFFFFFFFFFFFFFFF"})"
          "\n");
  std::string error;
  auto reader = TraceReader::Open(path_, &error);
  Record r;
  ASSERT_TRUE(reader->Next(&r));
  EXPECT_EQ(r.Hex("a"), 0xffu);
  EXPECT_EQ(r.Hex("b"), std::nullopt);
  EXPECT_EQ(r.Hex("c"), std::nullopt);
  EXPECT_EQ(r.Hex("d"), 0xFFFFFFFFFFFFFFFFu);
}

TEST(RecordTypesTest, IdsNameEachTypeOnce) {
  for (int id = 0; id < kRecordTypeCount; ++id) EXPECT_EQ(RecordTypeId(kRecordTypes[id]), id);
  EXPECT_EQ(RecordTypeId("collective"), kOtherRecordType);
  EXPECT_EQ(RecordTypeId("Coll"), kOtherRecordType);
  EXPECT_EQ(RecordTypeId(""), kOtherRecordType);
  static_assert(rec_id::kCollective == RecordTypeId(rec::kCollective));
  EXPECT_EQ(kRecordTypes[rec_id::kStepBegin], rec::kStepBegin);
}

TEST_F(ReaderTest, ToleratesCrLfAndUnknownFields) {
  const auto res = Read(std::string(kHeader) + "\r\n" +
                        R"({"future":[1,{"x":null}],"type":"mark","step":2,"ts":9,"tid":3})"
                        "\r\n");
  EXPECT_TRUE(res.header.has_value());
  ASSERT_EQ(res.types.size(), 1u);
  EXPECT_EQ(res.types[0], "mark");
  EXPECT_EQ(res.issue_count, 0);
}

TEST_F(ReaderTest, LinesAcrossChunkBoundariesAndLongLines) {
  // ~3 MiB of records, so lines straddle the 1 MiB read chunks, plus one 5 MiB line
  // that needs the buffer to grow.
  std::vector<std::string> lines;
  for (int i = 0; i < 30000; ++i) {
    lines.push_back(R"({"type":"custom","ts":)" + std::to_string(i) + R"(,"step":0,"pad":")" +
                    std::string(i % 150, 'p') + "\"}");
  }
  lines.insert(lines.begin() + 15000,
               R"({"type":"big","ts":0,"step":0,"data":")" + std::string(5 << 20, 'b') + "\"}");
  const auto res = ReadLines(lines);
  EXPECT_EQ(res.issue_count, 0);
  ASSERT_EQ(res.types.size(), 30001u);
  EXPECT_EQ(res.types[15000], "big");
  for (size_t i = 0; i < res.lines.size(); ++i) ASSERT_EQ(res.lines[i], int64_t(i) + 2);
}

TEST_F(ReaderTest, ToStringNamesFileLineColumn) {
  LocatedIssue i;
  i.file = "run/rank-00001.jsonl";
  i.line = 17;
  i.column = 42;
  i.expected = "',' or '}' after a member";
  i.found = "'x'";
  EXPECT_EQ(i.ToString(),
            "run/rank-00001.jsonl:17:42: expected ',' or '}' after a member, found 'x'");
}

TEST_F(ReaderTest, OpenFailsWithPathAndReason) {
  std::string error;
  EXPECT_EQ(TraceReader::Open(dir_.File("missing.jsonl"), &error), nullptr);
  EXPECT_NE(error.find("missing.jsonl"), std::string::npos) << error;
  EXPECT_NE(error.find("No such file"), std::string::npos) << error;
  EXPECT_EQ(TraceReader::Open(dir_.path(), &error), nullptr);
  EXPECT_NE(error.find("directory"), std::string::npos) << error;
}

// ---- bad input ----

TEST_F(ReaderTest, EmptyFileHasNoHeader) {
  const auto res = Read("");
  EXPECT_FALSE(res.header.has_value());
  EXPECT_TRUE(res.types.empty());
  ASSERT_EQ(res.issue_count, 1);
  ExpectIssue(res.issues[0], 1, 1, "a header record on line 1", "an empty file");
}

TEST_F(ReaderTest, BinaryGarbageGivesIssuesNotACrash) {
  std::mt19937 rng(7);
  std::string data("\0\0\0\x7f", 4);
  for (int i = 0; i < 256 * 1024; ++i) data.push_back(static_cast<char>(rng() & 0xff));
  const auto res = Read(data);
  EXPECT_FALSE(res.header.has_value());
  EXPECT_TRUE(res.types.empty());
  ASSERT_FALSE(res.issues.empty());
  ExpectIssue(res.issues[0], 1, 1, "a JSON object ('{')", "byte 0x00");
  EXPECT_EQ(res.issue_count, res.lines_read) << "one issue per line";
  EXPECT_EQ(res.issues.size(), size_t{TraceReader::kMaxIssuesKept});
  for (const LocatedIssue& i : res.issues) {
    EXPECT_GE(i.line, 1);
    EXPECT_GE(i.column, 1);
    EXPECT_FALSE(i.expected.empty());
  }
}

TEST_F(ReaderTest, InvalidUtf8AndNulInsideStrings) {
  const std::string prefix = R"({"type":"mark","ts":1,"step":0,"name":"a)";
  std::string with_nul = prefix;
  with_nul.push_back('\0');
  with_nul += "\"}";
  const auto res =
      ReadLines({prefix + "\xc3\x28\"}", with_nul, R"({"type":"mark","ts":1,"step":0})"});
  const int64_t column = int64_t(prefix.size()) + 1;
  ASSERT_EQ(res.issue_count, 2);
  ExpectIssue(res.issues[0], 2, column, "valid UTF-8 in the string", "byte 0xc3");
  ExpectIssue(res.issues[1], 3, column,
              "a printable character in the string (control bytes must be escaped)", "byte 0x00");
  EXPECT_EQ(res.types.size(), 1u);
}

TEST_F(ReaderTest, GarbageLineInTheMiddleIsSkipped) {
  const auto res = ReadLines({R"({"type":"step_begin","ts":1,"step":0})", "this is not json",
                              R"({"type":"step","ts":1,"step":0,"loss":2.5 "x":1})",
                              R"({"type":"step_begin","ts":2,"step":1})"});
  EXPECT_TRUE(res.header.has_value());
  EXPECT_EQ(res.types, (std::vector<std::string>{"step_begin", "step_begin"}));
  EXPECT_EQ(res.lines, (std::vector<int64_t>{2, 5}));
  ASSERT_EQ(res.issue_count, 2);
  ExpectIssue(res.issues[0], 3, 1, "a JSON object ('{')", "'this is not json'");
  ExpectIssue(res.issues[1], 4, 43, "',' or '}' after a member", "'\"x\":1}'");
}

TEST_F(ReaderTest, TruncatedLastLine) {
  const std::string cut = R"({"type":"step","ts":5,"st)";
  const auto res = Read(std::string(kHeader) + "\n" +
                        R"({"type":"step_begin","ts":1,"step":0})"
                        "\n" +
                        cut);
  EXPECT_EQ(res.types.size(), 1u);
  EXPECT_TRUE(res.truncated);
  ASSERT_EQ(res.issue_count, 1);
  ExpectIssue(res.issues[0], 3, int64_t(cut.size()) + 1,
              "'\\n' at end of line (the writer stopped mid-line)", "end of file");
  EXPECT_TRUE(res.issues[0].truncated_tail);
}

TEST_F(ReaderTest, CompleteJsonWithoutNewlineIsStillATruncatedTail) {
  const auto res = Read(std::string(kHeader) + "\n" + R"({"type":"end","ts":1,"step":0})");
  EXPECT_TRUE(res.types.empty());
  EXPECT_TRUE(res.truncated);
  ASSERT_EQ(res.issue_count, 1);
  EXPECT_TRUE(res.issues[0].truncated_tail);
}

TEST_F(ReaderTest, MissingCommonFields) {
  const auto res = ReadLines(
      {R"({"type":"phase","step":0})", R"({"type":"phase","ts":1})", R"({"ts":1,"step":0})"});
  EXPECT_TRUE(res.types.empty());
  ASSERT_EQ(res.issue_count, 3);
  ExpectIssue(res.issues[0], 2, 1, "integer field \"ts\"", "a record without it");
  ExpectIssue(res.issues[1], 3, 1, "integer field \"step\"", "a record without it");
  ExpectIssue(res.issues[2], 4, 1, "string field \"type\"", "a record without it");
}

TEST_F(ReaderTest, MistypedCommonFields) {
  const auto res = ReadLines(
      {R"({"type":"phase","ts":"12","step":0})", R"({"type":"phase","ts":12,"step":1.5})",
       R"({"type":7,"ts":12,"step":0})", R"({"type":"phase","ts":12,"step":0,"tid":"main"})",
       R"({"type":"phase","ts":18446744073709551615,"step":0})"});
  EXPECT_TRUE(res.types.empty());
  ASSERT_EQ(res.issue_count, 5);
  ExpectIssue(res.issues[0], 2, 22, "integer field \"ts\"", "'\"12\"'");
  ExpectIssue(res.issues[1], 3, 32, "integer field \"step\"", "'1.5'");
  ExpectIssue(res.issues[2], 4, 9, "string field \"type\"", "'7'");
  ExpectIssue(res.issues[3], 5, 40, "small non-negative integer field \"tid\"", "'\"main\"'");
  ExpectIssue(res.issues[4], 6, 22, "integer field \"ts\"");
}

TEST_F(ReaderTest, ArrayLineIsNotARecord) {
  const auto res = ReadLines({"[1,2,3]", "  \"just a string\""});
  ASSERT_EQ(res.issue_count, 2);
  ExpectIssue(res.issues[0], 2, 1, "a JSON object ('{')", "'[1,2,3]'");
  ExpectIssue(res.issues[1], 3, 3, "a JSON object ('{')");
}

TEST_F(ReaderTest, EmptyAndBlankLines) {
  const auto res = ReadLines({"", "   ", R"({"type":"mark","ts":1,"step":0})"});
  EXPECT_EQ(res.types.size(), 1u);
  ASSERT_EQ(res.issue_count, 2);
  ExpectIssue(res.issues[0], 2, 1, "a record (a JSON object)", "an empty line");
  ExpectIssue(res.issues[1], 3, 4, "a JSON object ('{')", "end of line");
}

TEST_F(ReaderTest, HeaderWithAnotherSchemaMajor) {
  const std::string header =
      R"({"type":"header","ts":1,"step":0,"schema":"dsdiag.trace/9","run_id":"r","rank":0,"world_size":2})";
  const auto res = Read(header + "\n" +
                        R"({"type":"mark","ts":1,"step":0})"
                        "\n");
  EXPECT_FALSE(res.header.has_value());
  EXPECT_EQ(res.types.size(), 1u) << "records still read from line 2";
  ASSERT_EQ(res.issue_count, 1);
  ExpectIssue(res.issues[0], 1, int64_t(header.find("\"dsdiag.trace/9\"")) + 1,
              "schema \"dsdiag.trace/5\" (major version 1 to 5)", "'\"dsdiag.trace/9\"'");
}

TEST_F(ReaderTest, HeaderWithANewerMinorIsAccepted) {
  const auto res = Read(
      R"({"type":"header","ts":1,"step":0,"schema":"dsdiag.trace/1.4","run_id":"r","rank":1,"world_size":2,"newsection":{"a":1}})"
      "\n");
  ASSERT_TRUE(res.header.has_value());
  EXPECT_EQ(res.header->rank, 1);
  EXPECT_EQ(res.header->sections.ToJson(), R"({"newsection":{"a":1}})");
  EXPECT_EQ(res.header->clock.offset_err_ns, -1) << "defaults for absent optional fields";
}

TEST_F(ReaderTest, HeaderNotFirst) {
  const auto res =
      Read(std::string(R"({"type":"step_begin","ts":1,"step":0})") + "\n" + kHeader + "\n" +
           R"({"type":"mark","ts":1,"step":0})"
           "\n");
  EXPECT_FALSE(res.header.has_value());
  EXPECT_EQ(res.types, std::vector<std::string>{"mark"});
  ASSERT_EQ(res.issue_count, 2);
  ExpectIssue(res.issues[0], 1, 9, "a header record (\"type\":\"header\") on line 1",
              "'\"step_begin\"'");
  ExpectIssue(res.issues[1], 2, 9, "an event record (a header belongs on line 1 only)",
              "'\"header\"'");
}

TEST_F(ReaderTest, HeaderFieldsMissingOrMistyped) {
  struct Case {
    std::string line;
    std::string expected;
    std::string found;
    std::string key;  // the field whose value the column points at
  };
  const std::vector<Case> cases = {
      {R"({"type":"header","ts":1,"step":0,"run_id":"r","rank":0,"world_size":2})",
       "string field \"schema\"", "no such field in the header", ""},
      {R"({"type":"header","ts":1,"step":0,"schema":"dsdiag.trace/1","rank":0,"world_size":2})",
       "string field \"run_id\"", "no such field in the header", ""},
      {R"({"type":"header","ts":1,"step":0,"schema":"dsdiag.trace/1","run_id":"r","rank":"0","world_size":2})",
       "integer field \"rank\"", "'\"0\"'", "rank"},
      {R"({"type":"header","ts":1,"step":0,"schema":"dsdiag.trace/1","run_id":"r","rank":2,"world_size":2})",
       "\"rank\" within [0, world_size)", "'2'", "rank"},
      {R"({"type":"header","ts":1,"step":0,"schema":"dsdiag.trace/1","run_id":"r","rank":0,"world_size":0})",
       "\"world_size\" at least 1", "'0'", "world_size"},
      {R"({"type":"header","ts":1,"step":0,"schema":"dsdiag.trace/1","run_id":"r","rank":0,"world_size":2,"env":{"A":1}})",
       "string values in \"env\"", "'{\"A\":1}'", "env"},
      {R"({"type":"header","ts":1,"step":0,"schema":"dsdiag.trace/1","run_id":"r","rank":0,"world_size":2,"config":[]})",
       "object field \"config\"", "'[]'", "config"},
      {R"({"type":"header","ts":1,"step":0,"schema":"dsdiag.trace/1","run_id":"r","rank":0,"world_size":2,"clock":{"mono":"x"}})",
       "integer members \"mono\", \"wall\", \"offset\", \"offset_err\" in \"clock\"",
       "'{\"mono\":\"x\"}'", "clock"},
      {R"({"type":"header","ts":1,"step":0,"schema":"trace/1","run_id":"r","rank":0,"world_size":2})",
       "schema \"dsdiag.trace/5\" (major version 1 to 5)", "'\"trace/1\"'", "schema"},
  };
  for (const Case& c : cases) {
    const auto res = Read(c.line + "\n");
    EXPECT_FALSE(res.header.has_value()) << c.line;
    ASSERT_EQ(res.issue_count, 1) << c.line;
    EXPECT_EQ(res.issues[0].line, 1);
    EXPECT_EQ(res.issues[0].expected, c.expected) << c.line;
    EXPECT_EQ(res.issues[0].found, c.found) << c.line;
    const int64_t column =
        c.key.empty() ? 1 : int64_t(c.line.find("\"" + c.key + "\":") + c.key.size() + 3) + 1;
    EXPECT_EQ(res.issues[0].column, column) << c.line;
  }
}

TEST_F(ReaderTest, ReadHeaderThenNextDoesNotRereadLineOne) {
  WriteFile(path_, std::string(kHeader) + "\n" +
                       R"({"type":"mark","ts":1,"step":0})"
                       "\n");
  std::string error;
  auto reader = TraceReader::Open(path_, &error);
  ASSERT_TRUE(reader->ReadHeader().has_value());
  ASSERT_TRUE(reader->ReadHeader().has_value());  // idempotent
  Record r;
  ASSERT_TRUE(reader->Next(&r));
  EXPECT_EQ(r.line(), 2);
  EXPECT_FALSE(reader->Next(&r));
}

TEST_F(ReaderTest, IssuesAreCappedButAllCounted) {
  std::vector<std::string> lines(100, "nonsense");
  const auto res = ReadLines(lines);
  EXPECT_EQ(res.issue_count, 100);
  EXPECT_EQ(res.issues.size(), size_t{TraceReader::kMaxIssuesKept});
  EXPECT_EQ(res.issues.back().line, TraceReader::kMaxIssuesKept + 1);
}

TEST_F(ReaderTest, VeryLongLineIsSkippedNotHeld) {
  const size_t limit = LineReader::kMaxLineBytes;
  std::string text = std::string(kHeader) + "\n";
  text += R"({"type":"custom","ts":1,"step":0,"data":")";
  text.append(limit + 1000, 'x');
  text += "\"}\n";
  const size_t long_length = text.size() - 1 - (std::string(kHeader).size() + 1);
  text += R"({"type":"mark","ts":2,"step":0})"
          "\n";
  const auto res = Read(text);
  EXPECT_EQ(res.types, std::vector<std::string>{"mark"});
  EXPECT_EQ(res.lines, std::vector<int64_t>{3});
  ASSERT_EQ(res.issue_count, 1);
  ExpectIssue(res.issues[0], 2, int64_t(limit) + 1, "a line shorter than 64 MiB",
              "a line of " + std::to_string(long_length) + " bytes");
}

}  // namespace
}  // namespace dsdiag::trace
