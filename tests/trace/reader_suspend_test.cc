// A suspended reader (TraceReader::Suspend / Resume, trace/reader_pool.h) must read exactly
// as one never suspended: the same records on the same lines, the same issues (a garbage
// line or a truncated tail right after a resume point included), lines, bytes, header and
// closed-reader line count, whether its file stays open or is closed and reopened.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "tests/trace/test_util.h"
#include "trace/line_reader.h"
#include "trace/reader_pool.h"
#include "trace/trace_reader.h"
#ifdef DSDIAG_HAVE_ZSTD
#include "trace/zstd_stream.h"
#endif

namespace dsdiag::trace {
namespace {

using testing::kHeader;
using testing::TempDir;
using testing::WriteFile;

std::string Record(int i, size_t pad = 0) {
  return R"({"type":"coll","ts":)" + std::to_string(1000 + i) + R"(,"step":)" +
         std::to_string(i / 10) + R"(,"seq":)" + std::to_string(i) + R"(,"pad":")" +
         std::string(pad, 'x') + R"("})";
}

// Everything a reader tells, record by record and at its end.
struct Read {
  std::vector<int64_t> lines;
  std::vector<std::string> raw;
  std::vector<std::string> issues;  // LocatedIssue::ToString, truncated flag appended
  int64_t issue_count = 0;
  int64_t lines_read = 0;
  int64_t bytes_read = 0;
  int64_t closed_lines = 0;  // what LinesReadByClosedReaders gained from this reader
  bool truncated = false;
  bool has_header = false;
  int suspensions = 0;  // Suspend calls that took
};

bool operator==(const Read& a, const Read& b) {
  return a.lines == b.lines && a.raw == b.raw && a.issues == b.issues &&
         a.issue_count == b.issue_count && a.lines_read == b.lines_read &&
         a.bytes_read == b.bytes_read && a.closed_lines == b.closed_lines &&
         a.truncated == b.truncated && a.has_header == b.has_header;
}

void PrintTo(const Read& r, std::ostream* os) {
  *os << r.lines.size() << " records, issues {";
  for (const auto& i : r.issues) *os << i << "; ";
  *os << "} count " << r.issue_count << ", lines " << r.lines_read << ", bytes " << r.bytes_read
      << ", closed lines " << r.closed_lines << (r.truncated ? ", truncated" : "");
}

// Reads `path`; after record i (0-based) when suspend_after(i), suspends the reader (closing
// its file when `close_file`) and resumes it, checking that the record comes again.
Read ReadSuspending(const std::string& path, const std::function<bool(size_t)>& suspend_after,
                    bool close_file, ReaderPool* pool) {
  Read out;
  const int64_t closed_before = TraceReader::LinesReadByClosedReaders();
  {
    std::string error;
    auto reader = TraceReader::Open(path, &error);
    EXPECT_NE(reader, nullptr) << error;
    if (!reader) return out;
    out.has_header = reader->ReadHeader().has_value();
    trace::Record record;
    bool again = false;  // the record just read is the one suspended on
    while (reader->Next(&record)) {
      if (again) {
        again = false;
        EXPECT_EQ(record.line(), out.lines.back());
        EXPECT_EQ(std::string(record.raw_line()), out.raw.back());
        continue;
      }
      out.lines.push_back(record.line());
      out.raw.emplace_back(record.raw_line());
      if (suspend_after(out.lines.size() - 1) && reader->Suspend(pool, close_file)) {
        ++out.suspensions;
        EXPECT_TRUE(reader->suspended());
        reader->Resume(pool);
        again = true;
      }
    }
    for (const LocatedIssue& i : reader->issues())
      out.issues.push_back(i.ToString() + (i.truncated_tail ? " [tail]" : ""));
    out.issue_count = reader->issue_count();
    out.lines_read = reader->lines_read();
    out.bytes_read = reader->bytes_read();
    out.truncated = reader->saw_truncated_tail();
  }
  out.closed_lines = TraceReader::LinesReadByClosedReaders() - closed_before;
  return out;
}

Read ReadPlain(const std::string& path) {
  ReaderPool pool;
  return ReadSuspending(
      path, [](size_t) { return false; }, false, &pool);
}

class ReaderSuspendTest : public ::testing::Test {
 protected:
  // Reads the file plainly, then suspending after every record, every 7th and at chosen
  // ones, with the file kept open and closed: all must read alike.
  void ExpectSameReads(const std::vector<size_t>& also_after = {}) {
    const Read plain = ReadPlain(path_);
    ASSERT_FALSE(plain.lines.empty());
    for (bool close_file : {false, true}) {
      ReaderPool pool;
      const Read every = ReadSuspending(
          path_, [](size_t) { return true; }, close_file, &pool);
      EXPECT_EQ(every, plain) << "close " << close_file;
      EXPECT_EQ(every.suspensions, static_cast<int>(plain.lines.size()));
      EXPECT_LE(pool.spare_buffers(), ReaderPool::kMaxSpare);
      const Read some = ReadSuspending(
          path_, [](size_t i) { return i % 7 == 3; }, close_file, &pool);
      EXPECT_EQ(some, plain) << "close " << close_file;
      const Read chosen = ReadSuspending(
          path_,
          [&](size_t i) {
            for (size_t a : also_after)
              if (a == i) return true;
            return false;
          },
          close_file, &pool);
      EXPECT_EQ(chosen, plain) << "close " << close_file;
    }
  }

  TempDir dir_;
  const std::string path_ = dir_.File("rank-00000.jsonl");
};

TEST_F(ReaderSuspendTest, ManyBlocksAndChunks) {
  // Past several 8 KiB blocks and 32 KiB chunks, so that rewinds land everywhere in both.
  std::string text = std::string(kHeader) + "\n";
  for (int i = 0; i < 3000; ++i) text += Record(i, static_cast<size_t>(i % 50)) + "\n";
  WriteFile(path_, text);
  ExpectSameReads({0, 1, 2, 500, 2999});
}

TEST_F(ReaderSuspendTest, GarbageLineRightAfterTheResumePoint) {
  std::string text = std::string(kHeader) + "\n";
  for (int i = 0; i < 400; ++i) {
    text += Record(i) + "\n";
    if (i % 100 == 10) text += "not json at all\n";
    if (i % 100 == 20)
      text += R"({"type":"coll","ts":"late","step":2})"
              "\n";
  }
  WriteFile(path_, text);
  const Read plain = ReadPlain(path_);
  EXPECT_EQ(plain.issue_count, 8);
  // Record 10 is followed by the garbage line, 20 by the bad field.
  ExpectSameReads({10, 20, 110, 120});
}

TEST_F(ReaderSuspendTest, TruncatedTailRightAfterTheResumePoint) {
  std::string text = std::string(kHeader) + "\n";
  for (int i = 0; i < 1200; ++i) text += Record(i) + "\n";
  text += R"({"type":"coll","ts":5,"st)";  // the writer died mid-line
  WriteFile(path_, text);
  const Read plain = ReadPlain(path_);
  ASSERT_EQ(plain.issues.size(), 1u);
  EXPECT_TRUE(plain.truncated);
  ExpectSameReads({1199});
}

TEST_F(ReaderSuspendTest, ALineLongerThanTheChunk) {
  std::string text = std::string(kHeader) + "\n";
  for (int i = 0; i < 300; ++i) {
    // Lines of 100 KB and 2 MB: the buffer grows past the pool's spare size.
    const size_t pad = i == 100 ? 100'000 : i == 200 ? 2'000'000 : 10;
    text += Record(i, pad) + "\n";
  }
  WriteFile(path_, text);
  ExpectSameReads({99, 100, 199, 200});
}

TEST_F(ReaderSuspendTest, NothingToRewindToBeforeTheFirstRecord) {
  WriteFile(path_, std::string(kHeader) + "\n" + Record(0) + "\n");
  std::string error;
  auto reader = TraceReader::Open(path_, &error);
  ASSERT_NE(reader, nullptr) << error;
  ReaderPool pool;
  reader->Resume(&pool);
  ASSERT_TRUE(reader->ReadHeader().has_value());
  EXPECT_FALSE(reader->Suspend(&pool, true));  // no record handed out yet
  trace::Record record;
  ASSERT_TRUE(reader->Next(&record));
  EXPECT_TRUE(reader->Suspend(&pool, true));
  EXPECT_TRUE(reader->Suspend(&pool, true));  // twice: still suspended, buffers with the pool
  EXPECT_EQ(pool.spare_buffers(), 1u);
  EXPECT_EQ(pool.spare_parsers(), 1u);
  reader->Resume(&pool);
  EXPECT_EQ(pool.spare_buffers(), 0u);
  ASSERT_TRUE(reader->Next(&record));
  EXPECT_EQ(record.line(), 2);
  EXPECT_FALSE(reader->Next(&record));
  EXPECT_FALSE(reader->Suspend(&pool, true));  // at the end: no record to hand out again
}

TEST_F(ReaderSuspendTest, ReadersTakeTurnsWithOnePool) {
  // Two files read a few records at a time each, alternately, through one pool: each reads
  // as it does alone, and the pool never holds more than one reader's buffers at rest.
  const std::string other = dir_.File("rank-00001.jsonl");
  std::string a = std::string(kHeader) + "\n", b = a;
  for (int i = 0; i < 900; ++i) a += Record(i) + "\n";
  for (int i = 0; i < 700; ++i) b += Record(i, 30) + "\n";
  b += "garbage\n";
  WriteFile(path_, a);
  WriteFile(other, b);
  std::vector<std::string> paths = {path_, other};
  ReaderPool pool;
  std::vector<std::unique_ptr<TraceReader>> readers;
  std::vector<std::vector<int64_t>> lines(2);
  std::string error;
  for (const auto& p : paths) {
    readers.push_back(TraceReader::Open(p, &error));
    ASSERT_NE(readers.back(), nullptr) << error;
  }
  std::vector<bool> done(2, false), again(2, false);
  while (!done[0] || !done[1]) {
    for (size_t r = 0; r < 2; ++r) {
      if (done[r]) continue;
      readers[r]->Resume(&pool);
      trace::Record record;
      for (int n = 0; n < 13; ++n) {
        if (!readers[r]->Next(&record)) {
          done[r] = true;
          break;
        }
        if (again[r]) {
          again[r] = false;
          EXPECT_EQ(record.line(), lines[r].back());
          --n;
          continue;
        }
        lines[r].push_back(record.line());
      }
      if (!done[r]) {
        ASSERT_TRUE(readers[r]->Suspend(&pool, r == 1));
        again[r] = true;
        EXPECT_EQ(pool.spare_buffers(), 1u);
      }
    }
  }
  for (size_t r = 0; r < 2; ++r) {
    const Read plain = ReadPlain(paths[r]);
    EXPECT_EQ(lines[r], plain.lines) << paths[r];
    EXPECT_EQ(readers[r]->lines_read(), plain.lines_read);
    EXPECT_EQ(readers[r]->bytes_read(), plain.bytes_read);
    EXPECT_EQ(readers[r]->issue_count(), plain.issue_count);
  }
}

TEST_F(ReaderSuspendTest, AFileGoneWhileClosedIsAReadIssueNamingIt) {
  std::string text = std::string(kHeader) + "\n";
  for (int i = 0; i < 50; ++i) text += Record(i) + "\n";
  WriteFile(path_, text);
  std::string error;
  auto reader = TraceReader::Open(path_, &error);
  ASSERT_NE(reader, nullptr) << error;
  ReaderPool pool;
  trace::Record record;
  ASSERT_TRUE(reader->Next(&record));
  ASSERT_TRUE(reader->Suspend(&pool, /*close_file=*/true));
  ASSERT_EQ(std::remove(path_.c_str()), 0);
  reader->Resume(&pool);
  EXPECT_FALSE(reader->Next(&record));
  ASSERT_EQ(reader->issues().size(), 1u);
  EXPECT_NE(reader->issues()[0].found.find("cannot reopen trace " + path_), std::string::npos)
      << reader->issues()[0].ToString();
  EXPECT_EQ(reader->issues()[0].line, 2);
}

#ifdef DSDIAG_HAVE_ZSTD
int AppendTo(void* out, const char* data, size_t size) {
  static_cast<std::string*>(out)->append(data, size);
  return 0;
}

TEST_F(ReaderSuspendTest, ACompressedTraceIsNeverSuspended) {
  std::string text = std::string(kHeader) + "\n";
  for (int i = 0; i < 500; ++i) text += Record(i) + "\n";
  std::string error;
  auto compressor = ZstdCompressor::Create(1, 1 << 16, &error);
  ASSERT_NE(compressor, nullptr) << error;
  std::string compressed;
  ASSERT_EQ(compressor->Compress(text, &AppendTo, &compressed), 0);
  ASSERT_EQ(compressor->End(&AppendTo, &compressed), 0);
  const std::string zst = dir_.File("rank-00002.jsonl.zst");
  WriteFile(zst, compressed);
  ReaderPool pool;
  const Read plain = ReadPlain(zst);
  const Read tried = ReadSuspending(
      zst, [](size_t) { return true; }, true, &pool);
  EXPECT_EQ(tried.suspensions, 0);
  EXPECT_EQ(tried, plain);
  EXPECT_EQ(plain.lines.size(), 500u);
}
#endif

}  // namespace
}  // namespace dsdiag::trace
