// RecordBatch (trace/record_batch.h): a record copied out of its reader must read back
// exactly as it read in the reader — common fields, every accessor, every kind of value —
// whatever its shape: nested values last, more members than the index lists, escapes,
// duplicate keys, no strings but the keys.
#include "trace/record_batch.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tests/trace/test_util.h"
#include "trace/trace_reader.h"

namespace dsdiag::trace {
namespace {

using testing::kHeader;
using testing::TempDir;

// Everything the accessors say about `r` for the keys the test lines use.
std::string Describe(const Record& r) {
  std::string out = std::string(r.type()) + " ts=" + std::to_string(r.ts()) +
                    " step=" + std::to_string(r.step()) + " tid=" + std::to_string(r.tid()) +
                    " line=" + std::to_string(r.line()) + " id=" + std::to_string(r.type_id());
  std::vector<std::string> keys = {"type",   "ts",   "step", "tid",  "seq",    "name",   "x",
                                   "hashes", "ints", "strs", "nest", "flag",   "none",   "big",
                                   "dup",    "esc",  "m23",  "m30",  "absent", "members"};
  for (const std::string& key : keys) {
    out += " | " + key + ":";
    if (!r.Has(key)) {
      out += "-";
      continue;
    }
    if (auto v = r.Int(key)) out += " int " + std::to_string(*v);
    if (auto v = r.Double(key)) out += " double " + std::to_string(*v);
    if (auto v = r.Bool(key)) out += std::string(" bool ") + (*v ? "t" : "f");
    if (auto v = r.Str(key)) out += " str " + std::string(*v);
    if (auto v = r.Hex(key)) out += " hex " + std::to_string(*v);
    std::vector<uint64_t> hexes;
    if (r.HexArray(key, &hexes)) out += " hexes " + std::to_string(hexes.size());
    std::vector<int64_t> ints;
    if (r.IntArray(key, &ints)) {
      out += " ints";
      for (int64_t i : ints) out += " " + std::to_string(i);
    }
    std::vector<std::string> strs;
    if (r.StrArray(key, &strs)) {
      out += " strs";
      for (const std::string& s : strs) out += " " + s;
    }
    std::vector<Record::NumberMember> members;
    if (r.NumberMembers(key, &members)) {
      out += " members";
      for (const auto& m : members)
        out += " " + std::string(m.name) + "=" + (m.is_number ? std::to_string(m.value) : "?");
    }
    if (auto v = r.Value(key)) out += " value " + v->ToJson();
  }
  return out;
}

std::string ManyMembers(int n) {
  std::string line = R"({"type":"wide","ts":5,"step":1)";
  for (int i = 0; i < n; ++i) line += ",\"m" + std::to_string(i) + "\":" + std::to_string(i * 7);
  return line + ",\"name\":\"after all\"}";
}

TEST(RecordBatchTest, ACopiedRecordReadsAsTheReaderReadIt) {
  TempDir dir;
  const std::vector<std::string> lines = {
      kHeader,
      R"({"type":"coll","ts":10,"step":0,"tid":3,"seq":1,"name":"all_reduce"})",
      R"({"type":"grad","ts":11,"step":0,"hashes":["00000000000000ff","123456789abcdef0"]})",
      R"({"type":"x","ts":12,"step":1,"ints":[1,-2,3],"strs":["a","","c\"d"],"nest":{"a":[1,{"b":"deep"}],"c":null}})",
      R"({"type":"x","ts":13,"step":1,"flag":true,"none":null,"big":18446744073709551615,"x":1.5})",
      R"({"type":"x","ts":14,"step":2,"dup":1,"dup":"second","esc":"tab\there \u00e9 \ud83d\ude00"})",
      R"({"type":"step","ts":15,"step":2,"members":{"loss":2.5,"n":3,"s":"no"}})",
      R"({"type":"x","ts":16,"step":2,"seq":9})",  // no strings but the keys and the type
      ManyMembers(30),                             // past FieldIndex::kMaxFields
      R"({"type":"x","ts":17,"step":3,"name":"last is nested","nest":[[],{},[{"z":"end"}]]})",
  };
  std::string text;
  for (const std::string& l : lines) text += l + "\n";
  auto reader = testing::OpenTraceText(dir, text);
  ASSERT_TRUE(reader);
  RecordBatch batch;
  std::vector<std::string> read;
  Record r;
  while (reader->Next(&r)) {
    read.push_back(Describe(r));
    batch.Append(r);
  }
  ASSERT_TRUE(reader->issues().empty()) << reader->issues()[0].ToString();
  ASSERT_EQ(read.size(), lines.size() - 1);  // the header is not a record
  EXPECT_EQ(batch.size(), read.size());

  RecordBatch::Cursor at;
  FieldIndex fields;
  std::vector<std::string> copied;
  while (batch.Next(&at, &r, &fields)) {
    copied.push_back(Describe(r));
    EXPECT_TRUE(r.raw_line().empty());
  }
  ASSERT_EQ(copied.size(), read.size());
  for (size_t i = 0; i < read.size(); ++i) EXPECT_EQ(copied[i], read[i]) << "line " << i + 2;
  // The values came through, not two empty descriptions that agree.
  EXPECT_NE(copied[2].find(R"(value {"a":[1,{"b":"deep"}],"c":null})"), std::string::npos)
      << copied[2];
  EXPECT_NE(copied[7].find("m23: int 161"), std::string::npos) << copied[7];
  EXPECT_NE(copied[7].find("name: str after all"), std::string::npos) << copied[7];
}

// The step driver's reading thread copies a record without looking a field up (its members
// are listed on the thread that reads the copy): the copy must still take every string
// byte, whatever holds the last string, and read back as the record does.
TEST(RecordBatchTest, ARecordCopiedBeforeAnyLookupReadsAsTheReaderReadIt) {
  TempDir dir;
  const std::vector<std::string> lines = {
      kHeader,
      R"({"type":"x","ts":1,"step":0,"seq":4})",  // the last string is a key
      R"({"type":"x","ts":2,"step":0,"name":"last string is a value"})",
      R"({"type":"x","ts":3,"step":0,"strs":["a","bc"],"seq":5})",  // a string, then a number
      R"({"type":"x","ts":4,"step":1,"nest":[[],{},[{"z":"end of the strings"}]]})",
      R"({"type":"x","ts":5,"step":1,"hashes":["00000000000000ff"]})",
      ManyMembers(30),
  };
  std::string text;
  for (const std::string& l : lines) text += l + "\n";
  std::vector<std::string> read;
  RecordBatch batch;
  {
    auto reader = testing::OpenTraceText(dir, text);
    ASSERT_TRUE(reader);
    Record r;
    while (reader->Next(&r)) batch.Append(r);  // no lookup first
  }
  {
    auto reader = testing::OpenTraceText(dir, text);
    Record r;
    while (reader->Next(&r)) read.push_back(Describe(r));
  }
  ASSERT_EQ(read.size(), lines.size() - 1);
  RecordBatch::Cursor at;
  FieldIndex fields;
  Record r;
  size_t i = 0;
  for (; batch.Next(&at, &r, &fields); ++i) {
    ASSERT_LT(i, read.size());
    EXPECT_EQ(Describe(r), read[i]) << "line " << i + 2;
  }
  EXPECT_EQ(i, read.size());
  EXPECT_NE(read[3].find(R"(value [[],{},[{"z":"end of the strings"}]])"), std::string::npos)
      << read[3];
}

TEST(RecordBatchTest, ClearKeepsNothingButTheMemory) {
  TempDir dir;
  auto reader = testing::OpenTraceText(
      dir, std::string(kHeader) + "\n" + R"({"type":"x","ts":2,"step":0,"seq":4})" + "\n");
  ASSERT_TRUE(reader);
  RecordBatch batch;
  Record r;
  while (reader->Next(&r)) batch.Append(r);
  EXPECT_EQ(batch.size(), 1u);
  EXPECT_GT(batch.bytes(), 0u);
  batch.Clear();
  EXPECT_EQ(batch.size(), 0u);
  EXPECT_EQ(batch.bytes(), 0u);
  RecordBatch::Cursor at;
  FieldIndex fields;
  EXPECT_FALSE(batch.Next(&at, &r, &fields));
}

// A reservation made between appends moves the copies already made; they read as before,
// and so do the ones appended into the reserved room.
TEST(RecordBatchTest, ReservingMovesNothingOutOfPlace) {
  TempDir dir;
  std::string text = std::string(kHeader) + "\n";
  for (int i = 0; i < 40; ++i) text += ManyMembers(i) + "\n";
  auto reader = testing::OpenTraceText(dir, text);
  ASSERT_TRUE(reader);
  RecordBatch batch;
  batch.Reserve(16);  // less than one record: the first appends still regrow the batch
  std::vector<std::string> read;
  Record r;
  while (reader->Next(&r)) {
    read.push_back(Describe(r));
    batch.Append(r);
    if (read.size() == 20) batch.Reserve(batch.bytes() * 8);
  }
  ASSERT_EQ(read.size(), 40u);
  const size_t bytes = batch.bytes();
  batch.Reserve(1);  // never shrinks, never moves what is there
  EXPECT_EQ(batch.bytes(), bytes);
  RecordBatch::Cursor at;
  FieldIndex fields;
  size_t i = 0;
  while (batch.Next(&at, &r, &fields)) {
    ASSERT_LT(i, read.size());
    EXPECT_EQ(Describe(r), read[i]) << "record " << i;
    ++i;
  }
  EXPECT_EQ(i, read.size());
}

}  // namespace
}  // namespace dsdiag::trace
