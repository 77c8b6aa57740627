// Byte sources and compressed traces: plain and zstd round trips, a writer killed between
// flushes (every flushed line must decode), truncated and garbage streams, empty files,
// compressed rank file names, and the clear errors of a build without libzstd.
#include "trace/byte_source.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "tests/trace/test_util.h"
#include "trace/record_types.h"
#include "trace/run_files.h"
#include "trace/trace_writer.h"
#include "trace/zstd_stream.h"

namespace dsdiag::trace {
namespace {

using testing::ReadFile;
using testing::SplitLines;
using testing::TempDir;
using testing::WriteFile;

// Serves a string in reads of at most `chunk` bytes, as a pipe would.
class StringSource : public ByteSource {
 public:
  StringSource(std::string data, size_t chunk) : data_(std::move(data)), chunk_(chunk) {}
  ssize_t Read(char* buffer, size_t capacity) override {
    const size_t n = std::min({capacity, chunk_, data_.size() - pos_});
    data_.copy(buffer, n, pos_);
    pos_ += n;
    return static_cast<ssize_t>(n);
  }

 private:
  std::string data_;
  size_t chunk_;
  size_t pos_ = 0;
};

struct Drained {
  std::string bytes;
  ssize_t last = 0;  // 0 at a clean end, -1 after an error
};

// Reads `source` to its end in reads of `capacity` bytes.
Drained Drain(ByteSource* source, size_t capacity) {
  Drained d;
  std::string buffer(capacity, '\0');
  for (;;) {
    d.last = source->Read(buffer.data(), capacity);
    if (d.last <= 0) return d;
    d.bytes.append(buffer.data(), static_cast<size_t>(d.last));
  }
}

// Distinct lines, so that a lost or repeated block shows.
std::string Lines(int first, int count) {
  std::string text;
  for (int i = first; i < first + count; ++i)
    text += "{\"type\":\"step\",\"step\":" + std::to_string(i) + ",\"loss\":2.5}\n";
  return text;
}

TEST(FdByteSourceTest, ReadsAPlainFileWhole) {
  TempDir dir;
  const std::string text = Lines(0, 5000);
  WriteFile(dir.File("rank-00000.jsonl"), text);
  std::string error;
  auto source = OpenByteSource(dir.File("rank-00000.jsonl"), &error);
  ASSERT_NE(source, nullptr) << error;
  const Drained d = Drain(source.get(), 4096);
  EXPECT_EQ(d.last, 0);
  EXPECT_EQ(d.bytes, text);
  EXPECT_TRUE(source->tail_issue().empty());
}

TEST(FdByteSourceTest, EmptyFileEndsAtOnce) {
  TempDir dir;
  WriteFile(dir.File("rank-00000.jsonl"), "");
  std::string error;
  auto source = OpenByteSource(dir.File("rank-00000.jsonl"), &error);
  ASSERT_NE(source, nullptr) << error;
  char c;
  EXPECT_EQ(source->Read(&c, 1), 0);
}

TEST(FdByteSourceTest, MissingFileAndDirectoryAreErrorsNamingThePath) {
  TempDir dir;
  std::string error;
  EXPECT_EQ(OpenByteSource(dir.File("rank-00009.jsonl.zst"), &error), nullptr);
  EXPECT_NE(error.find("rank-00009.jsonl.zst"), std::string::npos) << error;
  EXPECT_EQ(OpenByteSource(dir.path(), &error), nullptr);
  EXPECT_NE(error.find("directory"), std::string::npos) << error;
}

// A suspended reader's file: rewound and closed, it reopens at its next read and reads on
// from the offset asked for, however many times (by its name in the directory's fd).
TEST(FdByteSourceTest, RewoundAndClosedItReadsOnFromTheOffset) {
  TempDir dir;
  const std::string text = Lines(0, 200);
  WriteFile(dir.File("rank-00003.jsonl"), text);
  std::string error;
  auto source = OpenByteSource(dir.File("rank-00003.jsonl"), &error);
  ASSERT_NE(source, nullptr) << error;
  char buffer[64];
  for (const size_t offset : {size_t{10}, size_t{0}, text.size() - 5, size_t{777}}) {
    ASSERT_TRUE(source->Rewind(static_cast<int64_t>(offset), /*close_file=*/true));
    const ssize_t n = source->Read(buffer, sizeof buffer);
    ASSERT_GT(n, 0) << source->error();
    EXPECT_EQ(std::string(buffer, static_cast<size_t>(n)), text.substr(offset, sizeof buffer));
  }
  ASSERT_TRUE(source->Rewind(50, /*close_file=*/false));  // kept open: read at the offset
  EXPECT_EQ(Drain(source.get(), 100).bytes, text.substr(50));
}

// A trace named without a directory (compare run from inside the run directory).
TEST(FdByteSourceTest, ABareNameReopensInTheWorkingDirectory) {
  TempDir dir;
  WriteFile(dir.File("rank-00000.jsonl"), Lines(0, 3));
  char* cwd = getcwd(nullptr, 0);
  ASSERT_EQ(chdir(dir.path().c_str()), 0);
  std::string error;
  auto source = OpenByteSource("rank-00000.jsonl", &error);
  ASSERT_NE(source, nullptr) << error;
  ASSERT_TRUE(source->Rewind(3, /*close_file=*/true));
  const std::string read = Drain(source.get(), 16).bytes;
  EXPECT_EQ(chdir(cwd), 0);
  free(cwd);
  EXPECT_EQ(read, Lines(0, 3).substr(3));
}

// Reopened by name: a file gone while closed is an error that names it, not a crash.
TEST(FdByteSourceTest, AFileGoneWhileClosedIsAnErrorNamingIt) {
  TempDir dir;
  WriteFile(dir.File("rank-00001.jsonl"), Lines(0, 3));
  std::string error;
  auto source = OpenByteSource(dir.File("rank-00001.jsonl"), &error);
  ASSERT_NE(source, nullptr) << error;
  ASSERT_TRUE(source->Rewind(0, /*close_file=*/true));
  ASSERT_EQ(unlink(dir.File("rank-00001.jsonl").c_str()), 0);
  char c;
  EXPECT_EQ(source->Read(&c, 1), -1);
  EXPECT_NE(source->error().find("cannot reopen trace"), std::string::npos) << source->error();
  EXPECT_NE(source->error().find("rank-00001.jsonl"), std::string::npos) << source->error();
}

TEST(RunFilesTest, CompressedRankNames) {
  EXPECT_EQ(RankTraceFileName(3, TraceCompression::kZstd), "rank-00003.jsonl.zst");
  EXPECT_EQ(RankTraceFileName(3), "rank-00003.jsonl");
  EXPECT_EQ(ParseRankTraceFileName("rank-00003.jsonl.zst"), 3);
  EXPECT_EQ(ParseRankTraceFileName("rank-00003.jsonl"), 3);
  EXPECT_EQ(ParseRankTraceFileName("rank-00003.zst"), std::nullopt);
  EXPECT_EQ(ParseRankTraceFileName("rank-00003.jsonl.zst.tmp"), std::nullopt);
  EXPECT_EQ(ParseRankTraceFileName("rank-3.jsonl.zst"), std::nullopt);
}

TEST(RunFilesTest, PlainAndCompressedCopiesOfOneRankNameBoth) {
  const std::string e =
      DuplicateRankTraceError(1, "run/rank-00001.jsonl", "run/rank-00001.jsonl.zst");
  EXPECT_NE(e.find("'run/rank-00001.jsonl'"), std::string::npos) << e;
  EXPECT_NE(e.find("'run/rank-00001.jsonl.zst'"), std::string::npos) << e;
  EXPECT_NE(e.find("keep one"), std::string::npos) << e;
  const std::string plain = DuplicateRankTraceError(1, "rank-00001.jsonl", "rank-000001.jsonl");
  EXPECT_EQ(plain.find("keep one"), std::string::npos) << plain;
}

TEST(TraceCompressionTest, ParsesItsTwoNames) {
  EXPECT_EQ(ParseTraceCompression("zstd"), TraceCompression::kZstd);
  EXPECT_EQ(ParseTraceCompression("none"), TraceCompression::kNone);
  EXPECT_EQ(ParseTraceCompression("gzip"), std::nullopt);
  EXPECT_EQ(TraceCompressionName(TraceCompression::kZstd), "zstd");
}

#ifdef DSDIAG_HAVE_ZSTD

int AppendTo(void* out, const char* data, size_t size) {
  static_cast<std::string*>(out)->append(data, size);
  return 0;
}

// Compresses each batch with a flushed block; `end`: close the frame as a clean exit does.
std::string Compress(const std::vector<std::string>& batches, bool end, size_t batch_bytes,
                     int level = 1) {
  std::string error;
  auto c = ZstdCompressor::Create(level, batch_bytes, &error);
  EXPECT_NE(c, nullptr) << error;
  if (!c) return {};
  std::string out;
  for (const std::string& b : batches) EXPECT_EQ(c->Compress(b, &AppendTo, &out), 0);
  if (end) {
    EXPECT_EQ(c->End(&AppendTo, &out), 0);
  }
  return out;
}

std::unique_ptr<ByteSource> ZstdOver(std::string compressed, size_t chunk) {
  std::string error;
  auto source =
      MakeZstdByteSource(std::make_unique<StringSource>(std::move(compressed), chunk), &error);
  EXPECT_NE(source, nullptr) << error;
  return source;
}

TEST(ZstdByteSourceTest, RoundTripInAnyReadSizes) {
  const std::vector<std::string> batches = {Lines(0, 3000), Lines(3000, 1), "", Lines(3001, 20000)};
  const std::string compressed = Compress(batches, true, 64 << 10);
  const std::string text = batches[0] + batches[1] + batches[3];
  EXPECT_LT(compressed.size() * 4, text.size()) << "repetitive lines should compress well";
  for (size_t chunk : {size_t{1}, size_t{7}, size_t{128} << 10}) {
    for (size_t capacity : {size_t{1}, size_t{13}, size_t{1} << 20}) {
      auto source = ZstdOver(compressed, chunk);
      ASSERT_NE(source, nullptr);
      if (chunk == 1 && capacity == 1) continue;  // a byte at a time both ways: too slow
      const Drained d = Drain(source.get(), capacity);
      EXPECT_EQ(d.last, 0) << source->error();
      EXPECT_EQ(d.bytes, text) << "chunk " << chunk << " capacity " << capacity;
      EXPECT_TRUE(source->tail_issue().empty()) << source->tail_issue();
    }
  }
}

// The writer's level (TraceWriter::Options::zstd_level) and the highest, a block per batch.
TEST(ZstdByteSourceTest, HighLevelsRoundTrip) {
  const std::vector<std::string> batches = {Lines(0, 40), Lines(40, 40), Lines(80, 5000)};
  for (int level : {TraceWriter::Options().zstd_level, ZstdCompressor::kMaxLevel}) {
    auto source = ZstdOver(Compress(batches, true, 64 << 10, level), 4096);
    ASSERT_NE(source, nullptr);
    const Drained d = Drain(source.get(), 1 << 16);
    EXPECT_EQ(d.last, 0) << source->error();
    EXPECT_EQ(d.bytes, batches[0] + batches[1] + batches[2]) << "level " << level;
  }
}

TEST(ZstdByteSourceTest, ConcatenatedFramesReadAsOne) {
  const std::string a = Lines(0, 100);
  const std::string b = Lines(100, 100);
  auto source = ZstdOver(Compress({a}, true, 4096) + Compress({b}, true, 4096), 1000);
  const Drained d = Drain(source.get(), 4096);
  EXPECT_EQ(d.last, 0);
  EXPECT_EQ(d.bytes, a + b);
  EXPECT_TRUE(source->tail_issue().empty());
}

// What a killed writer leaves: no issue, as for a plain trace cut after a whole line.
TEST(ZstdByteSourceTest, UnendedFrameDeliversEveryFlushedBatchWithoutAnIssue) {
  const std::vector<std::string> batches = {Lines(0, 500), Lines(500, 500), Lines(1000, 1)};
  for (size_t chunk : {size_t{1}, size_t{4096}}) {
    auto source = ZstdOver(Compress(batches, false, 1 << 20), chunk);
    const Drained d = Drain(source.get(), 4096);
    EXPECT_EQ(d.last, 0);
    EXPECT_EQ(d.bytes, batches[0] + batches[1] + batches[2]);
    EXPECT_TRUE(source->tail_issue().empty()) << source->tail_issue();
  }
}

// A short write: every cut inside the last batch's bytes is a truncated tail.
TEST(ZstdByteSourceTest, EveryCutInsideTheLastBatchIsATruncatedTail) {
  std::string error;
  auto c = ZstdCompressor::Create(1, 1 << 16, &error);
  ASSERT_NE(c, nullptr) << error;
  std::string compressed;
  const std::string first = Lines(0, 50);
  ASSERT_EQ(c->Compress(first, &AppendTo, &compressed), 0);
  const size_t whole = compressed.size();
  ASSERT_EQ(c->Compress(Lines(50, 50), &AppendTo, &compressed), 0);
  for (size_t cut = whole + 1; cut < compressed.size(); ++cut) {
    auto source = ZstdOver(compressed.substr(0, cut), 4096);
    const Drained d = Drain(source.get(), 4096);
    EXPECT_EQ(d.last, 0) << "cut " << cut;
    EXPECT_EQ(d.bytes, first) << "cut " << cut;
    EXPECT_EQ(source->tail_issue(), "truncated compressed tail") << "cut " << cut;
  }
}

TEST(ZstdByteSourceTest, CutInsideABlockDeliversTheBlocksBefore) {
  // The third batch is random-looking enough to make a block of its own, cut in half.
  const std::string first = Lines(0, 200) + Lines(200, 200);
  std::string third;
  for (int i = 0; i < 2000; ++i) third += std::to_string(i * 2654435761u) + "\n";
  std::string error;
  auto c = ZstdCompressor::Create(1, 1 << 20, &error);
  ASSERT_NE(c, nullptr) << error;
  std::string compressed;
  ASSERT_EQ(c->Compress(first, &AppendTo, &compressed), 0);
  const size_t whole = compressed.size();
  ASSERT_EQ(c->Compress(third, &AppendTo, &compressed), 0);
  compressed.resize(whole + (compressed.size() - whole) / 2);

  auto source = ZstdOver(compressed, 4096);
  const Drained d = Drain(source.get(), 4096);
  EXPECT_EQ(d.last, 0) << source->error();
  EXPECT_EQ(d.bytes, first);
  EXPECT_EQ(source->tail_issue(), "truncated compressed tail");
}

TEST(ZstdByteSourceTest, GarbageIsAnErrorThatSaysSo) {
  auto source = ZstdOver(Lines(0, 10), 4096);  // plain text under a .zst name
  char buffer[256];
  errno = 0;
  EXPECT_EQ(source->Read(buffer, sizeof buffer), -1);
  EXPECT_EQ(errno, EBADMSG);
  EXPECT_NE(source->error().find("not a valid zstd stream"), std::string::npos) << source->error();
  EXPECT_EQ(source->Read(buffer, sizeof buffer), -1) << "an error must stick";
}

TEST(ZstdByteSourceTest, GarbageAfterAFrameComesAfterItsBytes) {
  const std::string text = Lines(0, 50);
  auto source = ZstdOver(Compress({text}, true, 4096) + "garbage, not a frame", 4096);
  const Drained d = Drain(source.get(), 1 << 16);
  EXPECT_EQ(d.last, -1);
  EXPECT_EQ(d.bytes, text);
  EXPECT_FALSE(source->error().empty());
}

TEST(ZstdByteSourceTest, EmptyCompressedFileIsEmptyNotTruncated) {
  TempDir dir;
  WriteFile(dir.File("rank-00000.jsonl.zst"), "");
  std::string error;
  auto source = OpenByteSource(dir.File("rank-00000.jsonl.zst"), &error);
  ASSERT_NE(source, nullptr) << error;
  const Drained d = Drain(source.get(), 4096);
  EXPECT_EQ(d.last, 0);
  EXPECT_TRUE(d.bytes.empty());
  EXPECT_TRUE(source->tail_issue().empty());
}

TEST(ZstdCompressorTest, RejectsLevelsOutsideOneToNineteen) {
  std::string error;
  EXPECT_EQ(ZstdCompressor::Create(0, 4096, &error), nullptr);
  EXPECT_NE(error.find("level"), std::string::npos) << error;
  EXPECT_EQ(ZstdCompressor::Create(20, 4096, &error), nullptr);
  EXPECT_NE(ZstdCompressor::Create(19, 4096, &error), nullptr);
  EXPECT_NE(ZstdCompressor::Create(1, 4096, &error), nullptr);
}

TEST(ZstdCompressorTest, BatchLargerThanItsBufferStillRoundTrips) {
  std::string big;
  for (int i = 0; i < 100000; ++i) big += std::to_string(i * 2654435761u) + "\n";
  auto source = ZstdOver(Compress({big}, true, 1024), 1 << 16);
  const Drained d = Drain(source.get(), 1 << 16);
  EXPECT_EQ(d.last, 0);
  EXPECT_EQ(d.bytes, big);
}

TraceWriter::Options Compressed() {
  TraceWriter::Options options;
  options.buffer_bytes = 8192;
  options.flush_interval_ms = 0;
  options.compression = TraceCompression::kZstd;
  return options;
}

std::string DecodeFile(const std::string& path, std::string* tail_issue) {
  std::string error;
  auto source = OpenByteSource(path, &error);
  EXPECT_NE(source, nullptr) << error;
  if (!source) return {};
  const Drained d = Drain(source.get(), 1 << 16);
  EXPECT_EQ(d.last, 0) << source->error();
  *tail_issue = std::string(source->tail_issue());
  return d.bytes;
}

TEST(CompressedWriterTest, ClosedWriterLeavesAWholeFrame) {
  TempDir dir;
  const std::string path = dir.File(RankTraceFileName(0, TraceCompression::kZstd));
  {
    std::string error;
    auto w = TraceWriter::Open(path, Compressed(), &error);
    ASSERT_NE(w, nullptr) << error;
    for (int i = 0; i < 3000; ++i) {
      w->SetStep(i);
      w->Begin(rec::kStep).line().Field("loss", 2.5);
      if (i % 100 == 0) w->Flush();
    }
  }
  std::string tail;
  const std::vector<std::string> lines = SplitLines(DecodeFile(path, &tail));
  EXPECT_TRUE(tail.empty()) << tail;
  ASSERT_EQ(lines.size(), 3000u);
  EXPECT_NE(lines[2999].find("\"step\":2999"), std::string::npos) << lines[2999];
  EXPECT_LT(ReadFile(path).size() * 3, 3000 * lines[0].size());
}

// The promise of ZSTD_e_flush: a writer SIGKILLed right after Flush (or after a flush
// from a signal handler) loses none of what it flushed.
TEST(CompressedWriterTest, KilledWriterLosesNothingItFlushed) {
  TempDir dir;
  for (bool from_signal : {false, true}) {
    const std::string path =
        dir.File(from_signal ? "rank-00001.jsonl.zst" : "rank-00000.jsonl.zst");
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      std::string error;
      auto w = TraceWriter::Open(path, Compressed(), &error);
      if (!w) ::_exit(3);
      for (int i = 0; i < 1000; ++i) w->Begin(rec::kStep).line().Field("i", i);
      if (from_signal) {
        w->FlushFromSignal();
      } else {
        w->Flush();
      }
      ::raise(SIGKILL);
      ::_exit(4);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
    std::string tail;
    const std::vector<std::string> lines = SplitLines(DecodeFile(path, &tail));
    EXPECT_TRUE(tail.empty()) << tail;  // stopped between blocks, as a kill does
    ASSERT_EQ(lines.size(), 1000u) << "from_signal " << from_signal;
    EXPECT_NE(lines[999].find("\"i\":999"), std::string::npos) << lines[999];
  }
}

TEST(CompressedWriterTest, WriteErrorsAreReportedNotThrown) {
  std::string error;
  auto w = TraceWriter::Open("/dev/full", Compressed(), &error);
  ASSERT_NE(w, nullptr) << error;
  for (int i = 0; i < 10; ++i) w->Begin(rec::kStep).line().Field("i", i);
  w->Flush();
  EXPECT_TRUE(w->failed());
  EXPECT_EQ(w->records_dropped(), 10u);
}

#else  // !DSDIAG_HAVE_ZSTD

TEST(NoZstdTest, CompressedTraceAsksForZstdD) {
  TempDir dir;
  WriteFile(dir.File("rank-00000.jsonl.zst"), "x");
  std::string error;
  EXPECT_EQ(OpenByteSource(dir.File("rank-00000.jsonl.zst"), &error), nullptr);
  EXPECT_NE(error.find("built without zstd: decompress with `zstd -d` first"), std::string::npos)
      << error;
}

TEST(NoZstdTest, WriterRefusesToCompress) {
  TempDir dir;
  TraceWriter::Options options;
  options.compression = TraceCompression::kZstd;
  std::string error;
  EXPECT_EQ(TraceWriter::Open(dir.File("rank-00000.jsonl.zst"), options, &error), nullptr);
  EXPECT_NE(error.find("built without zstd"), std::string::npos) << error;
}

#endif  // DSDIAG_HAVE_ZSTD

}  // namespace
}  // namespace dsdiag::trace
