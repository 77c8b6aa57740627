// trace/torch_fr/pickle_writer.h: the bytes of each value (the opcodes torch::jit::Pickler
// writes), round trips through ReadPickle and ParseTorchFrDump (a real torch dump read and
// written again), misuse, and — where a Python 3 is installed — `pickle.loads` of the output
// equal to the intended Python value, tuples included.
#include "trace/torch_fr/pickle_writer.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "tests/support/files.h"
#include "tests/support/temp_dir.h"
#include "trace/torch_fr/pickle_reader.h"
#include "trace/torch_fr/torch_fr_dump.h"

namespace dsdiag::trace {
namespace {

using namespace std::string_literals;
using test_support::ReadFile;
using test_support::WriteFile;

// The pickle of one value written by `write`, without PROTO and STOP.
template <class F>
std::string Body(F write) {
  std::string out;
  PickleWriter w(&out);
  write(w);
  w.Finish();
  EXPECT_EQ(out.substr(0, 2), "\x80\x02"s);
  EXPECT_EQ(out.back(), '.');
  return out.substr(2, out.size() - 3);
}

std::string Json(const std::string& pickle) {
  PickleError error;
  const auto v = ReadPickle(pickle, &error);
  if (!v) return "error: expected " + error.expected + ", found " + error.found;
  return v->ToJson();
}

TEST(PickleWriterTest, IntegersInTheSmallestFormTorchUses) {
  EXPECT_EQ(Body([](PickleWriter& w) { w.Int(0); }), "K\x00"s);
  EXPECT_EQ(Body([](PickleWriter& w) { w.Int(255); }), "K\xff"s);
  EXPECT_EQ(Body([](PickleWriter& w) { w.Int(3245); }), "M\xad\x0c"s);
  EXPECT_EQ(Body([](PickleWriter& w) { w.Int(60000); }), "M\x60\xea"s);
  EXPECT_EQ(Body([](PickleWriter& w) { w.Int(-1); }), "J\xff\xff\xff\xff"s);
  EXPECT_EQ(Body([](PickleWriter& w) { w.Int(1800000); }), "J\x40\x77\x1b\x00"s);
  // A wall-clock time in ns: LONG1 with 8 bytes, as in the fixtures.
  EXPECT_EQ(Body([](PickleWriter& w) { w.Int(1796219244766259456); }),
            "\x8a\x08\x00\x69\x03\xe7\xe2\x73\xed\x18"s);
  EXPECT_EQ(Body([](PickleWriter& w) { w.Int(INT64_MIN); }),
            "\x8a\x08\x00\x00\x00\x00\x00\x00\x00\x80"s);
}

TEST(PickleWriterTest, ScalarsAndStringsMemoizedByValue) {
  EXPECT_EQ(Body([](PickleWriter& w) { w.Float(1.5); }), "G\x3f\xf8\x00\x00\x00\x00\x00\x00"s);
  EXPECT_EQ(Body([](PickleWriter& w) { w.Bool(true); }), "\x88"s);
  EXPECT_EQ(Body([](PickleWriter& w) { w.Bool(false); }), "\x89"s);
  EXPECT_EQ(Body([](PickleWriter& w) { w.None(); }), "N"s);
  // BINUNICODE then BINPUT; the second "ab" is a BINGET of slot 0.
  EXPECT_EQ(Body([](PickleWriter& w) {
              w.BeginList();
              w.Str("ab");
              w.Str("");
              w.Str("ab");
              w.EndList();
            }),
            "](X\x02\x00\x00\x00"
            "abq\x00X\x00\x00\x00\x00q\x01h\x00"
            "e"s);
}

TEST(PickleWriterTest, ContainersAsTorchWritesThem) {
  // MARK even for an empty list or dict; a pair is TUPLE2.
  EXPECT_EQ(Body([](PickleWriter& w) {
              w.BeginList();
              w.EndList();
            }),
            "](e"s);
  EXPECT_EQ(Body([](PickleWriter& w) {
              w.BeginDict();
              w.EndDict();
            }),
            "}(u"s);
  EXPECT_EQ(Body([](PickleWriter& w) {
              w.BeginTuple();
              w.Int(1);
              w.Int(2);
              w.EndTuple();
            }),
            "K\x01K\x02\x86"s);
  EXPECT_EQ(Body([](PickleWriter& w) {
              w.BeginTuple();
              w.EndTuple();
            }),
            ")"s);
  // Past three items a MARK goes before the first.
  EXPECT_EQ(Body([](PickleWriter& w) {
              w.BeginList();
              w.BeginTuple();
              for (int i = 1; i <= 4; ++i) w.Int(i);
              w.EndTuple();
              w.EndList();
            }),
            "]("
            "(K\x01K\x02K\x03K\x04t"
            "e"s);
}

TEST(PickleWriterTest, StreamedDumpReadsBack) {
  std::string out;
  PickleWriter w(&out);
  w.BeginDict();
  w.Str("version");
  w.Str("2.10");
  w.Str("entries");
  w.BeginList();
  PickleWriter::MemoId frame = 0;
  for (int i = 0; i < 3; ++i) {
    w.BeginDict();
    w.Str("frames");
    w.BeginList();
    if (i == 0) {
      w.BeginDict();
      w.Str("name");
      w.Str("train_step");
      w.Str("line");
      w.Int(42);
      w.EndDict();
      frame = w.Memoize();
    } else {
      w.Get(frame);
    }
    w.EndList();
    w.Str("process_group");
    w.BeginTuple();
    w.Str("0");
    w.Str("default_pg");
    w.EndTuple();
    w.Str("time_created_ns");
    w.Int(int64_t{1796219244766259456} + i);
    w.Str("duration_ms");
    w.Float(0.25 * i);
    w.Str("time_discovered_started_ns");
    w.None();
    w.Str("retired");
    w.Bool(i != 2);
    w.EndDict();
  }
  w.EndList();
  w.EndDict();
  w.Finish();
  const std::string entry =
      "{\"frames\":[{\"name\":\"train_step\",\"line\":42}],\"process_group\":[\"0\","
      "\"default_pg\"],\"time_created_ns\":179621924476625945%d,\"duration_ms\":%s,"
      "\"time_discovered_started_ns\":null,\"retired\":%s}";
  auto one = [&](int i, const char* dur, const char* retired) {
    char buf[512];
    std::snprintf(buf, sizeof buf, entry.c_str(), 6 + i, dur, retired);
    return std::string(buf);
  };
  EXPECT_EQ(Json(out), "{\"version\":\"2.10\",\"entries\":[" + one(0, "0", "true") + "," +
                           one(1, "0.25", "true") + "," + one(2, "0.5", "false") + "]}");
  // Strings and the frame took one slot each, once.
  EXPECT_EQ(w.memo_size(), 15u);
}

TEST(PickleWriterTest, JsonTreeRoundTrip) {
  JsonValue v = JsonValue::Object();
  v.Set("a", int64_t{-70000});
  v.Set("b", JsonValue::Array());
  JsonValue list = JsonValue::Array();
  list.Push("x");
  list.Push(true);
  list.Push(JsonValue());
  list.Push(2.5);
  list.Push(int64_t{1} << 40);
  v.Set("c", list);
  JsonValue nested = JsonValue::Object();
  nested.Set("x", "x");
  v.Set("d", nested);
  std::string out;
  WritePickle(v, &out);
  PickleError error;
  const auto back = ReadPickle(out, &error);
  ASSERT_TRUE(back.has_value()) << error.expected << " / " << error.found;
  EXPECT_EQ(*back, v);
}

// A real torch 2.13 dump, read as a tree and written again, is the same dump.
TEST(PickleWriterTest, RealDumpWrittenAgainParsesTheSame) {
  const std::string path =
      std::string(DSDIAG_SOURCE_DIR) + "/fixtures/torch_fr/clean/nccl_trace_rank_0";
  const std::string bytes = ReadFile(path);
  PickleError error;
  const auto tree = ReadPickle(bytes, &error);
  ASSERT_TRUE(tree.has_value());
  std::string again;
  WritePickle(*tree, &again);
  const auto tree_again = ReadPickle(again, &error);
  ASSERT_TRUE(tree_again.has_value());
  EXPECT_EQ(*tree_again, *tree);
  LocatedIssue issue;
  const auto a = ParseTorchFrDump("nccl_trace_rank_0", bytes, &issue);
  const auto b = ParseTorchFrDump("nccl_trace_rank_0", again, &issue);
  ASSERT_TRUE(a && b) << issue.ToString();
  ASSERT_EQ(a->entries.size(), b->entries.size());
  for (size_t i = 0; i < a->entries.size(); ++i) {
    EXPECT_EQ(a->entries[i].profiling_name, b->entries[i].profiling_name);
    EXPECT_EQ(a->entries[i].collective_seq_id, b->entries[i].collective_seq_id);
    EXPECT_EQ(a->entries[i].pg_name, b->entries[i].pg_name);
    EXPECT_EQ(a->entries[i].time_created_ns, b->entries[i].time_created_ns);
    EXPECT_EQ(a->entries[i].frames.size(), b->entries[i].frames.size());
  }
  EXPECT_EQ(a->version, b->version);
  EXPECT_EQ(a->group_status.size(), b->group_status.size());
}

TEST(PickleWriterTest, MisuseThrows) {
  std::string out;
  {
    PickleWriter w(&out);
    EXPECT_THROW(w.EndDict(), std::logic_error);
    w.BeginList();
    EXPECT_THROW(w.EndDict(), std::logic_error);
    EXPECT_THROW(w.Finish(), std::logic_error);
    EXPECT_THROW(w.Get(7), std::logic_error);
  }
  PickleWriter w(&out);
  w.BeginDict();
  w.Str("key");
  EXPECT_THROW(w.EndDict(), std::logic_error);  // no value
}

// Python's own pickle loads what the writer wrote as the intended value (tuples as tuples,
// None, floats, big ints, memoized frames as equal dicts). Skipped without a python3.
TEST(PickleWriterTest, PythonLoadsTheIntendedValue) {
  std::string python;
  for (const char* p : {"/usr/bin/python3", "/usr/local/bin/python3"}) {
    if (std::filesystem::exists(p)) {
      python = p;
      break;
    }
  }
  if (python.empty()) GTEST_SKIP() << "no python3 to check pickle.loads against";
  test_support::TempDir dir("pickle-writer");
  std::string out;
  PickleWriter w(&out);
  w.BeginDict();
  w.Str("version");
  w.Str("2.10");
  w.Str("pg_status");
  w.BeginDict();
  w.Str("0");
  w.BeginDict();
  w.Str("last_started_collective");
  w.Int(-1);
  w.EndDict();
  w.EndDict();
  w.Str("entries");
  w.BeginList();
  PickleWriter::MemoId frame = 0;
  for (int i = 0; i < 300; ++i) {  // past 256 memo slots: LONG_BINPUT / LONG_BINGET
    w.BeginDict();
    w.Str("frames");
    w.BeginList();
    if (i == 0) {
      w.BeginDict();
      w.Str("name");
      w.Str("train_step");
      w.Str("filename");
      w.Str("train.py");
      w.Str("line");
      w.Int(88);
      w.EndDict();
      frame = w.Memoize();
    } else {
      w.Get(frame);
    }
    w.EndList();
    w.Str("process_group");
    w.BeginTuple();
    w.Str("0");
    w.Str("default_pg");
    w.EndTuple();
    w.Str("thread_id");
    w.Str(std::to_string(140000000000000 + i));
    w.Str("time_created_ns");
    w.Int(int64_t{1796219244766259456} + i);
    w.Str("duration_ms");
    w.Float(0.5);
    w.Str("input_sizes");
    w.BeginList();
    w.BeginList();
    w.Int(65536);
    w.EndList();
    w.EndList();
    w.Str("time_discovered_started_ns");
    w.None();
    w.Str("retired");
    w.Bool(i % 2 == 0);
    w.EndDict();
  }
  w.EndList();
  w.EndDict();
  w.Finish();
  ASSERT_GT(w.memo_size(), 256u);
  WriteFile(dir / "dump", out);
  WriteFile(dir / "check.py",
            "import pickle, sys\n"
            "d = pickle.load(open(sys.argv[1], 'rb'))\n"
            "frame = {'name': 'train_step', 'filename': 'train.py', 'line': 88}\n"
            "want = {'version': '2.10', 'pg_status': {'0': {'last_started_collective': -1}},\n"
            "        'entries': [{'frames': [frame], 'process_group': ('0', 'default_pg'),\n"
            "                     'thread_id': str(140000000000000 + i),\n"
            "                     'time_created_ns': 1796219244766259456 + i,\n"
            "                     'duration_ms': 0.5, 'input_sizes': [[65536]],\n"
            "                     'time_discovered_started_ns': None, 'retired': i % 2 == 0}\n"
            "                    for i in range(300)]}\n"
            "sys.exit(0 if d == want and list(d) == list(want) else 1)\n");
  const std::string command = python + " " + dir / "check.py" + " " + dir / "dump";
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
}

}  // namespace
}  // namespace dsdiag::trace
