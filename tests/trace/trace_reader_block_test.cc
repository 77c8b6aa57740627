// The reader parses many lines per simdjson call (a block of complete lines as one document
// stream) and falls back to one call per line for a block with a line it cannot vouch for.
// These tests hold that to "reads exactly as a line read alone": the same issue text for a
// bad line wherever it sits in a file, and every good line around it as a record.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tests/trace/test_util.h"
#include "trace/line_reader.h"
#include "trace/trace_reader.h"

namespace dsdiag::trace {
namespace {

using testing::kHeader;
using testing::TempDir;
using testing::WriteFile;

std::string GoodRecord(int i) {
  return R"({"type":"coll","ts":)" + std::to_string(1000 + i) + R"(,"step":)" +
         std::to_string(i / 10) + R"(,"pg":0,"seq":)" + std::to_string(i) +
         R"(,"op":"allreduce","tag":"grad-bucket-)" + std::to_string(i % 3) + R"("})";
}

struct Read {
  std::vector<int64_t> lines;  // of the records
  std::vector<int64_t> seqs;   // their "seq" (-1 when absent)
  std::vector<LocatedIssue> issues;
  int64_t issue_count = 0;
  int64_t lines_read = 0;
  bool truncated = false;
};

Read ReadFileWith(const std::string& path, bool owned) {
  Read out;
  std::string error;
  auto reader = TraceReader::Open(path, &error);
  EXPECT_NE(reader, nullptr) << error;
  if (!reader) return out;
  const auto take = [&out](const Record& r) {
    out.lines.push_back(r.line());
    out.seqs.push_back(r.Int("seq").value_or(-1));
  };
  if (owned) {
    OwnedRecord record;
    while (reader->NextOwned(&record)) take(record.record());
  } else {
    Record record;
    while (reader->Next(&record)) take(record);
  }
  out.issues = reader->issues();
  out.issue_count = reader->issue_count();
  out.lines_read = reader->lines_read();
  out.truncated = reader->saw_truncated_tail();
  return out;
}

// Lines a writer never produces, each read alone as one issue (or, for the last two, as a
// record: JSON whitespace around the object is allowed).
const std::vector<std::string> kOddLines = {
    "garbage here",
    "",
    "   ",
    "[1,2,3]",
    "  42",
    R"("just a string")",
    R"({"type":"step","ts":1,"step":3} {"type":"step","ts":2,"step":3})",
    R"({"type":"step","ts":1,"step":3}{"type":"step","ts":2,"step":3})",
    R"({"type":"phase","ts":5,"step":)",
    R"("ts":5,"step":4})",
    R"({"type":"coll","ts":"x","step":4})",
    R"({"ts":9,"step":4})",
    R"({"type":"coll","ts":9,"step":4,"tid":-1})",
    R"({"type":"header","ts":9,"step":0})",
    "{\"type\":\"coll\",\"ts\":9,\"step\":4,\"name\":\"\xff\xfe\"}",
    "{\"type\":\"coll\",\"ts\":9,\"step\":4,\"name\":\"a\x01b\"}",
    R"({"type":"coll","ts":18446744073709551616,"step":4})",
    R"({"type":"coll","ts":9,"step":4,"s":"unterminated})",
    R"({"type":"coll","ts":9,"step":4}})",
    R"({"type":"coll","ts":9,"step":4)",
    std::string("\0\0\0", 3),
    R"({"type":"coll","ts":9,"step":4,"n":1e999})",
    "nul",
    "{\"type\":\"coll\",\"ts\":9,\"step\":4,\"seq\":-5}\r",
    "\t{\"type\":\"coll\",\"ts\":9,\"step\":4,\"seq\":-5}  \t",
};

class BlockReadTest : public ::testing::Test {
 protected:
  // The header, then `lines`, each with its '\n'.
  Read ReadLines(const std::vector<std::string>& lines, bool owned = false) {
    std::string text = std::string(kHeader) + "\n";
    for (const std::string& l : lines) text += l + "\n";
    WriteFile(path_, text);
    return ReadFileWith(path_, owned);
  }
  // The header, then `lines`, each with its '\n'; a reader at its start (null on failure).
  std::unique_ptr<TraceReader> OpenLines(const std::vector<std::string>& lines) {
    std::string text = std::string(kHeader) + "\n";
    for (const std::string& l : lines) text += l + "\n";
    WriteFile(path_, text);
    std::string error;
    auto reader = TraceReader::Open(path_, &error);
    EXPECT_NE(reader, nullptr) << error;
    return reader;
  }

  TempDir dir_;
  const std::string path_ = dir_.File("rank-00000.jsonl");
};

TEST_F(BlockReadTest, OddLineReadsTheSameAmidGoodLinesAsAlone) {
  // Good lines enough for a few blocks; the odd line goes first, in the middle, next to the
  // block size and last.
  std::vector<std::string> good;
  size_t bytes = 0;
  while (bytes < 3 * LineReader::kBlockBytes) {
    good.push_back(GoodRecord(static_cast<int>(good.size())));
    bytes += good.back().size() + 1;
  }
  const size_t near_block = LineReader::kBlockBytes / (bytes / good.size());
  for (const std::string& odd : kOddLines) {
    SCOPED_TRACE("line: " + odd);
    const Read alone = ReadLines({odd});
    ASSERT_LE(alone.issues.size(), 1u);
    for (size_t at : {size_t{0}, near_block - 1, near_block, good.size() / 2, good.size()}) {
      SCOPED_TRACE("after good line " + std::to_string(at));
      std::vector<std::string> lines(good.begin(), good.begin() + at);
      lines.push_back(odd);
      lines.insert(lines.end(), good.begin() + at, good.end());
      for (bool owned : {false, true}) {
        const Read amid = ReadLines(lines, owned);
        const int64_t shift = static_cast<int64_t>(at);  // line 2 alone is line 2 + at amid
        ASSERT_EQ(amid.issues.size(), alone.issues.size());
        if (!alone.issues.empty()) {
          const LocatedIssue& a = alone.issues[0];
          const LocatedIssue& b = amid.issues[0];
          EXPECT_EQ(b.line, a.line + shift);
          EXPECT_EQ(b.column, a.column);
          EXPECT_EQ(b.expected, a.expected);
          EXPECT_EQ(b.found, a.found);
          EXPECT_EQ(b.truncated_tail, a.truncated_tail);
        }
        EXPECT_EQ(amid.issue_count, alone.issue_count);
        EXPECT_EQ(amid.lines_read, static_cast<int64_t>(lines.size()) + 1);
        // Every good line is a record, with its own line number; so is the odd line when
        // it was one alone.
        std::vector<int64_t> want_lines, want_seqs;
        for (size_t i = 0; i < lines.size(); ++i) {
          if (i == at && alone.lines.empty()) continue;
          want_lines.push_back(static_cast<int64_t>(i) + 2);
          want_seqs.push_back(i == at ? alone.seqs.at(0)
                                      : static_cast<int64_t>(i < at ? i : i - 1));
        }
        EXPECT_EQ(amid.lines, want_lines);
        EXPECT_EQ(amid.seqs, want_seqs);
      }
    }
  }
}

TEST_F(BlockReadTest, UnterminatedTailAfterManyBlocks) {
  std::string text = std::string(kHeader) + "\n";
  int n = 0;
  while (text.size() < 2 * LineReader::kBlockBytes + 100) text += GoodRecord(n++) + "\n";
  text += GoodRecord(n);  // complete JSON, but no '\n': the writer died mid-line
  WriteFile(path_, text);
  const Read r = ReadFileWith(path_, false);
  ASSERT_EQ(r.seqs.size(), static_cast<size_t>(n));
  EXPECT_EQ(r.seqs.back(), n - 1);
  ASSERT_EQ(r.issues.size(), 1u);
  EXPECT_TRUE(r.issues[0].truncated_tail);
  EXPECT_EQ(r.issues[0].line, n + 2);
  EXPECT_TRUE(r.truncated);
}

TEST_F(BlockReadTest, OverLongLineBetweenBlocks) {
  std::vector<std::string> lines;
  for (int i = 0; i < 2000; ++i) lines.push_back(GoodRecord(i));
  lines.insert(lines.begin() + 1000, R"({"type":"coll","ts":9,"step":4,"s":")" +
                                         std::string(LineReader::kMaxLineBytes, 'a') + R"("})");
  const Read r = ReadLines(lines);
  ASSERT_EQ(r.issues.size(), 1u);
  EXPECT_EQ(r.issues[0].line, 1002);
  EXPECT_EQ(r.issues[0].column, static_cast<int64_t>(LineReader::kMaxLineBytes) + 1);
  ASSERT_EQ(r.seqs.size(), 2000u);
  for (int i = 0; i < 2000; ++i) EXPECT_EQ(r.seqs[i], i);
  EXPECT_EQ(r.lines[1000], 1003);
}

// ---- field lookups ----

TEST_F(BlockReadTest, FieldLookupsGiveTheFirstOfAName) {
  std::string many = R"({"type":"custom","ts":1,"step":0)";
  for (int i = 0; i < 40; ++i) many += ",\"f" + std::to_string(i) + "\":" + std::to_string(i);
  many += R"(,"f3":-3,"last":"x"})";
  const std::string lines[] = {
      R"({"type":"custom","ts":1,"step":0,"a":1,"a":2,"b":"s","b":3})",
      // Keys that share their first 8 bytes, or differ by an embedded NUL or their length.
      R"({"type":"custom","ts":1,"step":0,"abcdefgh1":1,"abcdefgh2":2,"abcdefgh":3,"abcdefg":4,"":5,"a\u0000":6,"a":7})",
      many,
  };
  auto reader = OpenLines({lines[0], lines[1], lines[2]});
  ASSERT_NE(reader, nullptr);
  Record r;
  ASSERT_TRUE(reader->Next(&r));
  EXPECT_EQ(r.Int("a"), 1);
  EXPECT_EQ(r.Str("b"), "s");
  EXPECT_EQ(r.Int("b"), std::nullopt);  // the first "b" is a string
  EXPECT_EQ(r.Double("a"), 1.0);
  EXPECT_FALSE(r.Has("c"));
  EXPECT_FALSE(r.Has("aa"));
  EXPECT_EQ(r.Str("type"), "custom");

  ASSERT_TRUE(reader->Next(&r));
  EXPECT_EQ(r.Int("abcdefgh1"), 1);
  EXPECT_EQ(r.Int("abcdefgh2"), 2);
  EXPECT_EQ(r.Int("abcdefgh"), 3);
  EXPECT_EQ(r.Int("abcdefg"), 4);
  EXPECT_EQ(r.Int(""), 5);
  EXPECT_EQ(r.Int(std::string_view("a\0", 2)), 6);
  EXPECT_EQ(r.Int("a"), 7);
  EXPECT_FALSE(r.Has("abcdefgh3"));
  EXPECT_FALSE(r.Has("abcdef"));
  EXPECT_EQ(r.Value("abcdefgh2")->as_int(), 2);

  ASSERT_TRUE(reader->Next(&r));  // more fields than the reader lists
  for (int i = 0; i < 40; ++i) EXPECT_EQ(r.Int("f" + std::to_string(i)), i) << i;
  EXPECT_EQ(r.Str("last"), "x");
  EXPECT_FALSE(r.Has("f40"));
  EXPECT_FALSE(reader->Next(&r));
}

// The reader indexes a record's members by a hash of their key's length and first bytes;
// keys whose hashes share a slot ("type" and "why", "step" and "bytes", "lr" and "phases"
// do) are looked up down the list instead, which must give the same answers.
TEST_F(BlockReadTest, FieldLookupsWhereKeysShareASlot) {
  const std::string lines[] = {
      R"({"type":"fp","ts":1,"step":7,"why":"init","bytes":12,"lr":0.5,"phases":{"data":3}})",
      R"({"why":"first","type":"fp","ts":1,"step":7,"why":"second","bytes":"s","bytes":9})",
      R"({"type":"fp","ts":1,"step":7,"lr":1})",  // "phases" absent, its slot-mate present
  };
  auto reader = OpenLines({lines[0], lines[1], lines[2]});
  ASSERT_NE(reader, nullptr);
  Record r;
  ASSERT_TRUE(reader->Next(&r));
  EXPECT_EQ(r.type(), "fp");
  EXPECT_EQ(r.step(), 7);
  EXPECT_EQ(r.Str("why"), "init");
  EXPECT_EQ(r.Int("bytes"), 12);
  EXPECT_EQ(r.Double("lr"), 0.5);
  EXPECT_TRUE(r.Has("phases"));
  const std::optional<JsonValue> phases = r.Value("phases");
  ASSERT_TRUE(phases && phases->Find("data"));
  EXPECT_EQ(phases->Find("data")->as_int(), 3);

  ASSERT_TRUE(reader->Next(&r));
  EXPECT_EQ(r.type(), "fp");
  EXPECT_EQ(r.Str("why"), "first");
  EXPECT_EQ(r.Str("bytes"), "s");
  EXPECT_EQ(r.Int("bytes"), std::nullopt);  // the first "bytes" is a string

  ASSERT_TRUE(reader->Next(&r));
  EXPECT_EQ(r.Int("lr"), 1);
  EXPECT_FALSE(r.Has("phases"));
  EXPECT_FALSE(r.Has("why"));
  EXPECT_FALSE(reader->Next(&r));
}

// Int, Double, Bool and Str read values off the parsed document as simdjson's own getters
// would: an unsigned past INT64_MAX is no Int but is a Double, an int is a Double too.
TEST_F(BlockReadTest, TypedLookupsFollowTheParsersRules) {
  auto reader = OpenLines(
      {R"({"type":"custom","ts":1,"step":0,"big":18446744073709551615,"max":9223372036854775807,)"
       R"("neg":-5,"d":2.5,"t":true,"f":false,"n":null,"s":"x","o":{"k":1},"a":[1]})"});
  ASSERT_NE(reader, nullptr);
  Record r;
  ASSERT_TRUE(reader->Next(&r));
  EXPECT_EQ(r.Int("big"), std::nullopt);
  EXPECT_EQ(r.Double("big"), 18446744073709551615.0);
  EXPECT_EQ(r.Int("max"), INT64_MAX);
  EXPECT_EQ(r.Int("neg"), -5);
  EXPECT_EQ(r.Double("neg"), -5.0);
  EXPECT_EQ(r.Int("d"), std::nullopt);
  EXPECT_EQ(r.Double("d"), 2.5);
  EXPECT_EQ(r.Bool("t"), true);
  EXPECT_EQ(r.Bool("f"), false);
  EXPECT_EQ(r.Bool("n"), std::nullopt);
  EXPECT_TRUE(r.Has("n"));
  EXPECT_EQ(r.Str("s"), "x");
  EXPECT_EQ(r.Str("o"), std::nullopt);
  EXPECT_EQ(r.Int("a"), std::nullopt);
  EXPECT_EQ(r.Str("missing"), std::nullopt);
}

// Common fields past the members the reader lists are still found and checked.
TEST_F(BlockReadTest, CommonFieldsAfterManyMembers) {
  std::string head;
  for (int i = 0; i < 30; ++i) head += "\"f" + std::to_string(i) + "\":" + std::to_string(i) + ",";
  auto reader = OpenLines({"{" + head + R"("type":"mark","ts":5,"step":2,"tid":4})",
                           "{" + head + R"("type":"mark","ts":5,"step":2,"tid":-1})"});
  ASSERT_NE(reader, nullptr);
  Record r;
  ASSERT_TRUE(reader->Next(&r));
  EXPECT_EQ(r.type(), rec::kMark);
  EXPECT_EQ(r.type_id(), rec_id::kMark);
  EXPECT_EQ(r.step(), 2);
  EXPECT_EQ(r.tid(), 4);
  EXPECT_EQ(r.Int("f29"), 29);
  EXPECT_FALSE(reader->Next(&r));
  ASSERT_EQ(reader->issues().size(), 1u);
  EXPECT_EQ(reader->issues()[0].line, 3);
  EXPECT_EQ(reader->issues()[0].expected, "small non-negative integer field \"tid\"");
}

TEST_F(BlockReadTest, HexArrays) {
  std::string many = R"({"type":"fp","ts":1,"step":0)";
  for (int i = 0; i < 30; ++i) many += ",\"f" + std::to_string(i) + "\":" + std::to_string(i);
  many += R"(,"h":["00000000000000Ff"]})";
  const std::string lines[] = {
      R"({"type":"fp","ts":1,"step":0,"h":["00000000000000ff","FFFFFFFFFFFFFFFF","0123456789abcdef"],"e":[]})",
      R"({"type":"fp","ts":1,"step":0,"short":["ff"],"digit":["000000000000000g"],"num":[1],"obj":{"h":1},"nested":[["0000000000000000"]]})",
      many,
  };
  auto reader = OpenLines({lines[0], lines[1], lines[2]});
  ASSERT_NE(reader, nullptr);
  Record r;
  std::vector<uint64_t> h = {42};
  ASSERT_TRUE(reader->Next(&r));
  ASSERT_TRUE(r.HexArray("h", &h));
  EXPECT_EQ(h, (std::vector<uint64_t>{0xff, 0xFFFFFFFFFFFFFFFFu, 0x0123456789abcdefu}));
  ASSERT_TRUE(r.HexArray("e", &h));
  EXPECT_TRUE(h.empty());
  EXPECT_FALSE(r.HexArray("absent", &h));

  ASSERT_TRUE(reader->Next(&r));
  for (const char* key : {"short", "digit", "num", "obj", "nested"})
    EXPECT_FALSE(r.HexArray(key, &h)) << key;

  ASSERT_TRUE(reader->Next(&r));  // more members than the reader lists
  ASSERT_TRUE(r.HexArray("h", &h));
  EXPECT_EQ(h, std::vector<uint64_t>{0xff});
}

// NumberMembers off the tape, a field among the listed members or past them: ints, doubles,
// a uint64 past int64, non-numbers, the first of a duplicate key (as the object lookup did).
TEST_F(BlockReadTest, NumberMembersReadAlikeOffTheTapeAndThroughTheObject) {
  const std::string members =
      R"({"a":5,"b":-2.5,"c":18446744073709551615,"d":"x","e":null,"a":7,"f":{"g":1}})";
  std::string many = R"({"type":"step","ts":1,"step":0)";
  for (int i = 0; i < 30; ++i) many += ",\"f" + std::to_string(i) + "\":" + std::to_string(i);
  many += ",\"phases\":" + members + "}";
  auto reader = OpenLines({R"({"type":"step","ts":1,"step":0,"phases":)" + members +
                               R"(,"dur":3,"empty":{},"list":[1]})",
                           many});
  ASSERT_NE(reader, nullptr);
  for (int line = 0; line < 2; ++line) {
    Record r;
    ASSERT_TRUE(reader->Next(&r));
    std::vector<Record::NumberMember> m(3);
    ASSERT_TRUE(r.NumberMembers("phases", &m)) << line;
    ASSERT_EQ(m.size(), 6u) << line;  // a, b, c, d, e, f: the second "a" is left out
    EXPECT_EQ(m[0].name, "a");
    EXPECT_TRUE(m[0].is_int64);
    EXPECT_EQ(m[0].int64, 5);
    EXPECT_EQ(m[0].value, 5.0);
    EXPECT_TRUE(m[1].is_number);
    EXPECT_FALSE(m[1].is_int64);
    EXPECT_EQ(m[1].value, -2.5);
    EXPECT_TRUE(m[2].is_number);
    EXPECT_FALSE(m[2].is_int64);
    EXPECT_EQ(m[2].value, 18446744073709551615.0);
    for (size_t i = 3; i < 6; ++i) EXPECT_FALSE(m[i].is_number) << m[i].name;
    EXPECT_EQ(m[5].name, "f");
    if (line == 0) {
      EXPECT_TRUE(r.NumberMembers("empty", &m));
      EXPECT_TRUE(m.empty());
      EXPECT_FALSE(r.NumberMembers("list", &m));
      EXPECT_FALSE(r.NumberMembers("dur", &m));
      EXPECT_FALSE(r.NumberMembers("absent", &m));
    }
  }
}

// The common fields come from one walk over the members that lists none: wherever they
// stand, the first of a repeated name, and no other key that starts like one of them.
TEST_F(BlockReadTest, TheCommonFieldsAreTheFirstOfTheirNameWhereverTheyStand) {
  auto reader = OpenLines({
      R"({"typ":"no","types":"no","tsx":9,"ts":7,"steps":9,"step":3,"tidy":9,"type":"x"})",
      R"({"type":"x","ts":1,"step":2,"step":9,"seq":1,"tid":4,"tid":"ignored"})",
      R"({"step":5,"name":"z","tid":6,"ts":8,"type":"y","ts":"ignored"})",
  });
  ASSERT_NE(reader, nullptr);
  Record r;
  ASSERT_TRUE(reader->Next(&r));
  EXPECT_EQ(r.type(), "x");
  EXPECT_EQ(r.ts(), 7);
  EXPECT_EQ(r.step(), 3);
  EXPECT_EQ(r.tid(), 0);
  ASSERT_TRUE(reader->Next(&r));
  EXPECT_EQ(r.step(), 2);
  EXPECT_EQ(r.tid(), 4);
  EXPECT_EQ(r.Int("seq"), 1);
  ASSERT_TRUE(reader->Next(&r));
  EXPECT_EQ(r.type(), "y");
  EXPECT_EQ(r.ts(), 8);
  EXPECT_EQ(r.step(), 5);
  EXPECT_EQ(r.tid(), 6);
  EXPECT_EQ(r.Str("name"), "z");
  EXPECT_FALSE(reader->Next(&r));
  EXPECT_TRUE(reader->issues().empty()) << reader->issues()[0].ToString();
}

}  // namespace
}  // namespace dsdiag::trace
