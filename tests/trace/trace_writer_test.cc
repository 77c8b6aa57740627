// TraceWriter: whole lines under concurrency, timely flushing, crash safety, disk errors
// and flushing from a signal handler. No assertion depends on timing: waits poll with a
// generous deadline and only fail when nothing happens at all.
#include "trace/trace_writer.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <map>
#include <set>
#include <thread>
#include <vector>

#include "tests/trace/test_util.h"
#include "trace/record_types.h"
#include "trace/run_files.h"
#include "trace/trace_reader.h"

namespace dsdiag::trace {
namespace {

using testing::ReadFile;
using testing::SplitLines;
using testing::TempDir;

constexpr auto kGenerousDeadline = std::chrono::seconds(60);

int64_t FileSize(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 ? st.st_size : -1;
}

// Polls `holds` until it does or kGenerousDeadline passes.
template <typename Predicate>
bool WaitUntil(Predicate holds) {
  const auto deadline = std::chrono::steady_clock::now() + kGenerousDeadline;
  while (std::chrono::steady_clock::now() < deadline) {
    if (holds()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return false;
}

// Polls until the file holds at least `bytes`; false only if the deadline passes.
bool WaitForSize(const std::string& path, int64_t bytes) {
  return WaitUntil([&] { return FileSize(path) >= bytes; });
}

std::unique_ptr<TraceWriter> OpenOrDie(const std::string& path, TraceWriter::Options options) {
  std::string error;
  auto w = TraceWriter::Open(path, options, &error);
  EXPECT_NE(w, nullptr) << error;
  return w;
}

TraceHeader MinimalHeader() {
  TraceHeader h;
  h.schema = std::string(kSchema);
  h.run_id = "writer-test";
  return h;
}

std::string IssuesText(const TraceReader& r) {
  std::string text;
  for (const LocatedIssue& i : r.issues()) text += i.ToString() + "\n";
  return text;
}

TEST(TraceWriter, StampsCommonFields) {
  TempDir dir;
  const std::string path = dir.File("rank-00000.jsonl");
  {
    auto w = OpenOrDie(path, {4096, 0});
    w->SetStep(7);
    w->BeginAt(rec::kPhase, 12345).line().Field("name", "forward").Field("dur", int64_t{10});
    std::thread([&] { w->NameThisThread("loader-worker-0"); }).join();
  }
  const std::vector<std::string> lines = SplitLines(ReadFile(path));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], R"({"type":"phase","ts":12345,"step":7,"name":"forward","dur":10})");
  EXPECT_EQ(lines[1].rfind(R"({"type":"thread","ts":)", 0), 0u) << lines[1];
  EXPECT_NE(lines[1].find(R"("step":7,"tid":)"), std::string::npos) << lines[1];
  EXPECT_NE(lines[1].find(R"("name":"loader-worker-0"})"), std::string::npos) << lines[1];
}

TEST(TraceWriter, NestedAndMovedRecordsStayWhole) {
  TempDir dir;
  const std::string path = dir.File("rank-00000.jsonl");
  {
    auto w = OpenOrDie(path, {4096, 0});
    auto outer = w->Begin("custom");
    outer.line().Field("name", "outer");
    {
      auto inner = w->Begin("custom");
      inner.line().Field("name", "inner");
    }
    auto moved = std::move(outer);
    moved.line().Field("more", 1);
    moved.Commit();
    moved.Commit();  // a second commit writes nothing
  }
  const std::vector<std::string> lines = SplitLines(ReadFile(path));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[0].find(R"("name":"inner"})"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find(R"("name":"outer","more":1})"), std::string::npos) << lines[1];
}

TEST(TraceWriter, RecordLargerThanTheBufferIsWrittenWhole) {
  TempDir dir;
  const std::string path = dir.File("rank-00000.jsonl");
  const std::string big(100000, 'z');
  {
    auto w = OpenOrDie(path, {1024, 0});
    w->Begin("custom").line().Field("a", 1);
    w->Begin("custom").line().Field("big", big);
    w->Begin("custom").line().Field("a", 2);
    w->Flush();
    EXPECT_EQ(w->records_written(), 3u);
  }
  const std::vector<std::string> lines = SplitLines(ReadFile(path));
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_NE(lines[1].find(big), std::string::npos);
}

TEST(TraceWriter, ConcurrentThreadsWriteWholeLines) {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 10000;
  TempDir dir;
  const std::string path = dir.File("rank-00000.jsonl");
  {
    // A small buffer and a fast flusher make writes and appends interleave a lot.
    auto w = OpenOrDie(path, {4096, 1});
    w->WriteHeader(MinimalHeader());
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&w, t] {
        const std::string pad(50, 'x');  // records of varying length
        for (int i = 0; i < kPerThread; ++i) {
          auto r = w->Begin(rec::kCustom);
          r.line()
              .Field("thread", t)
              .Field("i", i)
              .Field("pad", std::string_view(pad).substr(0, i % 50));
        }
      });
    }
    for (auto& th : threads) th.join();
    w->Flush();
    EXPECT_EQ(w->records_written(), uint64_t{kThreads * kPerThread + 1});
    EXPECT_EQ(w->records_dropped(), 0u);
    EXPECT_FALSE(w->failed());
  }
  std::string error;
  auto r = TraceReader::Open(path, &error);
  ASSERT_NE(r, nullptr) << error;
  ASSERT_TRUE(r->ReadHeader().has_value()) << IssuesText(*r);
  std::map<int, int> next_i;  // per writer thread: the next expected "i"
  std::map<int, int> tid_of;  // writer thread -> tid
  Record record;
  int64_t count = 0;
  while (r->Next(&record)) {
    ++count;
    const int t = static_cast<int>(*record.Int("thread"));
    EXPECT_EQ(*record.Int("i"), next_i[t]) << "records of one thread stay in order";
    next_i[t] = static_cast<int>(*record.Int("i")) + 1;
    EXPECT_TRUE(record.Has("tid"));
    EXPECT_NE(record.tid(), 0);
    auto [it, inserted] = tid_of.emplace(t, record.tid());
    EXPECT_EQ(it->second, record.tid());
  }
  EXPECT_EQ(r->issue_count(), 0) << IssuesText(*r);
  EXPECT_EQ(count, kThreads * kPerThread);
  EXPECT_EQ(r->lines_read(), kThreads * kPerThread + 1);
  std::set<int> tids;
  for (const auto& [t, tid] : tid_of) tids.insert(tid);
  EXPECT_EQ(tids.size(), size_t{kThreads}) << "each thread has its own tid";
  for (const auto& [t, n] : next_i) EXPECT_EQ(n, kPerThread);
}

TEST(TraceWriter, FlusherWritesWithoutExplicitFlush) {
  TempDir dir;
  const std::string path = dir.File("rank-00000.jsonl");
  auto w = OpenOrDie(path, {size_t{1} << 20, 10});
  w->Begin(rec::kMark).line().Field("name", "tick");
  EXPECT_TRUE(WaitForSize(path, 10)) << "the flusher thread never wrote the record";
  // The flusher counts the record once its write(2) returned: the file can show the bytes
  // a moment before the count does (seen once in CI).
  EXPECT_TRUE(WaitUntil([&] { return w->records_written() == 1u; }))
      << "records_written() = " << w->records_written();
}

TEST(TraceWriter, WithoutFlusherNothingIsWrittenUntilFlush) {
  TempDir dir;
  const std::string path = dir.File("rank-00000.jsonl");
  auto w = OpenOrDie(path, {size_t{1} << 20, 0});
  w->Begin(rec::kMark).line().Field("name", "tick");
  EXPECT_EQ(FileSize(path), 0);
  w->Flush();
  EXPECT_GT(FileSize(path), 0);
}

// The flusher writes what has waited an interval, not whatever it finds at each look: a
// process flushing at every step gets no write of the flusher's in between.
TEST(TraceWriter, FlusherWritesOnlyLinesThatWaitedAnInterval) {
  TempDir dir;
  const std::string path = dir.File("rank-00000.jsonl");
  constexpr int kIntervalMs = 2000;  // the flusher looks every 500 ms
  auto w = OpenOrDie(path, {size_t{1} << 20, kIntervalMs});
  const auto appended = std::chrono::steady_clock::now();
  w->Begin(rec::kMark).line().Field("name", "tick");
  std::this_thread::sleep_for(std::chrono::milliseconds(700));  // past a look
  // Only meaningful while the line is younger than the interval (a loaded machine may
  // oversleep): then no look may have written it.
  if (std::chrono::steady_clock::now() - appended < std::chrono::milliseconds(kIntervalMs - 100)) {
    EXPECT_EQ(FileSize(path), 0) << "the flusher wrote a line younger than its interval";
  }
  EXPECT_TRUE(WaitForSize(path, 10)) << "the flusher never wrote the record";
}

TEST(TraceWriter, EndOfStepWritesAPlainTrace) {
  TempDir dir;
  const std::string path = dir.File("rank-00000.jsonl");
  auto w = OpenOrDie(path, {size_t{1} << 20, 0});
  w->Begin(rec::kStep).line().Field("dur", 5);
  w->EndOfStep();
  EXPECT_GT(FileSize(path), 0);
}

#ifdef DSDIAG_HAVE_ZSTD
// Compressed, a step's records wait for the next flush (the next step's begin): every write
// ends a zstd block, and one block a step compresses better than two.
TEST(TraceWriter, EndOfStepLeavesACompressedTraceToTheNextFlush) {
  TempDir dir;
  const std::string path = dir.File(RankTraceFileName(0, TraceCompression::kZstd));
  TraceWriter::Options options;
  options.flush_interval_ms = 0;
  options.compression = TraceCompression::kZstd;
  auto w = OpenOrDie(path, options);
  w->Begin(rec::kStep).line().Field("dur", 5);
  w->EndOfStep();
  EXPECT_EQ(FileSize(path), 0);
  w->Begin(rec::kStepBegin).line().Field("epoch", 0);
  w->Flush();
  EXPECT_GT(FileSize(path), 0);
  EXPECT_EQ(w->records_written(), 2u);
}
#endif

TEST(TraceWriter, DestructorStopsALongFlushIntervalPromptly) {
  TempDir dir;
  const std::string path = dir.File("rank-00000.jsonl");
  {
    // If the destructor waited for the interval, this test would hit the test timeout.
    auto w = OpenOrDie(path, {size_t{1} << 20, 3600 * 1000});
    w->Begin(rec::kEnd).line().Field("reason", "ok");
  }
  EXPECT_EQ(SplitLines(ReadFile(path)).size(), 1u);
}

TEST(TraceWriter, KilledWriterLeavesOnlyWholeLinesAndAtMostATruncatedTail) {
  TempDir dir;
  const std::string path = dir.File("rank-00000.jsonl");
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::string error;
    auto w = TraceWriter::Open(path, {8192, 1}, &error);
    if (!w) _exit(2);
    w->WriteHeader(MinimalHeader());
    const std::string pad(300, 'p');
    for (int64_t i = 0;; ++i) {
      w->SetStep(i / 100);
      w->Begin(rec::kCustom)
          .line()
          .Field("i", i)
          .Field("pad", std::string_view(pad).substr(0, i % 300));
    }
  }
  const bool grew = WaitForSize(path, 2 << 20);
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(grew) << "the child never wrote 2 MiB";
  ASSERT_TRUE(WIFSIGNALED(status)) << "the child should die by SIGKILL, status " << status;

  std::string error;
  auto r = TraceReader::Open(path, &error);
  ASSERT_NE(r, nullptr) << error;
  ASSERT_TRUE(r->ReadHeader().has_value()) << IssuesText(*r);
  Record record;
  int64_t expect_i = 0;
  while (r->Next(&record)) {
    ASSERT_EQ(*record.Int("i"), expect_i) << "no line may be lost or torn in the middle";
    ++expect_i;
  }
  EXPECT_GT(expect_i, 1000);
  ASSERT_LE(r->issue_count(), 1) << IssuesText(*r);
  if (r->issue_count() == 1) {
    EXPECT_TRUE(r->issues()[0].truncated_tail) << IssuesText(*r);
    EXPECT_TRUE(r->saw_truncated_tail());
    EXPECT_EQ(r->issues()[0].line, r->lines_read());
  }
  // Independently of the reader: every line but the last ends with '\n'.
  const std::string text = ReadFile(path);
  const std::vector<std::string> lines = SplitLines(text);
  const bool tail_cut = !text.empty() && text.back() != '\n';
  EXPECT_EQ(static_cast<int64_t>(lines.size()), 1 + expect_i + (tail_cut ? 1 : 0));
}

TEST(TraceWriter, WriteErrorIsReportedOnceAndRecordsAreDropped) {
  if (FileSize("/dev/full") < 0) GTEST_SKIP() << "no /dev/full here";
  ::testing::internal::CaptureStderr();
  uint64_t dropped = 0;
  bool failed = false;
  {
    std::string error;
    auto w = TraceWriter::Open("/dev/full", {4096, 0}, &error);
    ASSERT_NE(w, nullptr) << error;
    for (int i = 0; i < 10; ++i) w->Begin(rec::kCustom).line().Field("i", i);
    w->Flush();
    for (int i = 0; i < 5; ++i) w->Begin(rec::kCustom).line().Field("i", i);
    w->Flush();
    w->FlushFromSignal();
    failed = w->failed();
    dropped = w->records_dropped();
    EXPECT_EQ(w->records_written(), 0u);
  }
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(failed);
  EXPECT_EQ(dropped, 15u);
  EXPECT_EQ(SplitLines(err).size(), 1u) << err;
  EXPECT_NE(err.find("/dev/full"), std::string::npos) << err;
  EXPECT_NE(err.find("No space left on device"), std::string::npos) << err;
}

TEST(TraceWriter, OpenReportsPathAndReason) {
  std::string error;
  auto w = TraceWriter::Open("/nonexistent-dir/rank-00000.jsonl", {}, &error);
  EXPECT_EQ(w, nullptr);
  EXPECT_NE(error.find("/nonexistent-dir/rank-00000.jsonl"), std::string::npos) << error;
  EXPECT_NE(error.find("No such file or directory"), std::string::npos) << error;
}

// ---- flushing from a signal handler ----

std::atomic<TraceWriter*> g_signal_writer{nullptr};
std::atomic<int> g_handler_calls{0};

void FlushHandler(int) {
  if (TraceWriter* w = g_signal_writer.load()) w->FlushFromSignal();
  g_handler_calls.fetch_add(1);
}

class SignalFlushTest : public ::testing::Test {
 protected:
  void SetUp() override {
    struct sigaction sa = {};
    sa.sa_handler = FlushHandler;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    ASSERT_EQ(sigaction(SIGUSR1, &sa, &old_), 0);
  }
  void TearDown() override {
    g_signal_writer = nullptr;
    sigaction(SIGUSR1, &old_, nullptr);
  }
  struct sigaction old_ = {};
};

TEST_F(SignalFlushTest, HandlerFlushesBufferedRecords) {
  TempDir dir;
  const std::string path = dir.File("rank-00000.jsonl");
  auto w = OpenOrDie(path, {size_t{1} << 20, 0});
  g_signal_writer = w.get();
  for (int i = 0; i < 3; ++i) w->Begin(rec::kCustom).line().Field("i", i);
  EXPECT_EQ(FileSize(path), 0);
  raise(SIGUSR1);  // the handler runs before raise() returns
  EXPECT_EQ(SplitLines(ReadFile(path)).size(), 3u);
  EXPECT_EQ(w->records_written(), 3u);
}

TEST_F(SignalFlushTest, HandlerInterruptingAWriterNeverDeadlocks) {
  TempDir dir;
  const std::string path = dir.File("rank-00000.jsonl");
  constexpr int kRecords = 50000;
  auto w = OpenOrDie(path, {2048, 0});
  w->WriteHeader(MinimalHeader());
  g_signal_writer = w.get();
  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (int i = 0; i < kRecords; ++i) w->Begin(rec::kCustom).line().Field("i", i);
    done = true;
  });
  // Signals land on the writing thread itself, often while it holds the buffer lock:
  // FlushFromSignal must then give up instead of waiting for itself.
  const pthread_t target = writer.native_handle();
  int sent = 0;
  while (!done.load()) {
    pthread_kill(target, SIGUSR1);
    ++sent;
    std::this_thread::yield();
  }
  writer.join();
  w->Flush();
  EXPECT_GT(sent, 0);
  std::string error;
  auto r = TraceReader::Open(path, &error);
  ASSERT_NE(r, nullptr) << error;
  Record record;
  int expect_i = 0;
  while (r->Next(&record)) {
    ASSERT_EQ(*record.Int("i"), expect_i);
    ++expect_i;
  }
  EXPECT_EQ(expect_i, kRecords);
  EXPECT_EQ(r->issue_count(), 0) << IssuesText(*r);
}

}  // namespace
}  // namespace dsdiag::trace
