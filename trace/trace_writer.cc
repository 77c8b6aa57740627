#include "trace/trace_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

#include "trace/clock.h"
#include "trace/record_types.h"
#include "trace/records/thread_record.h"
#include "trace/zstd_stream.h"

namespace dsdiag::trace {

#ifndef DSDIAG_HAVE_ZSTD
// Never made without libzstd; complete only so that the writer's unique_ptr compiles.
class ZstdCompressor {};
#endif

namespace {

// Per-thread scratch strings for records being built. Usually one is in use at a time;
// a thread that begins a record while another of its records is still open (a nested
// scope) gets a second one. Each keeps its capacity, so a warm thread allocates nothing.
struct ScratchSlot {
  std::string text;
  bool busy = false;
};
thread_local std::vector<std::unique_ptr<ScratchSlot>> tls_scratch;

std::string* AcquireScratch() {
  for (auto& slot : tls_scratch) {
    if (!slot->busy) {
      slot->busy = true;
      slot->text.clear();
      return &slot->text;
    }
  }
  tls_scratch.push_back(std::make_unique<ScratchSlot>());
  tls_scratch.back()->busy = true;
  return &tls_scratch.back()->text;
}

// A record committed on another thread than the one that began it leaves its slot busy
// on the first thread; that thread simply makes a new one.
void ReleaseScratch(std::string* text) {
  for (auto& slot : tls_scratch) {
    if (&slot->text == text) {
      slot->busy = false;
      return;
    }
  }
}

// Appends `s` to a fixed buffer without allocating (signal context).
size_t AppendRaw(char* buf, size_t pos, size_t cap, const char* s) {
  while (*s != '\0' && pos < cap) buf[pos++] = *s++;
  return pos;
}

size_t AppendDecimal(char* buf, size_t pos, size_t cap, int v) {
  char digits[12];
  int n = 0;
  unsigned u = v < 0 ? 0u - static_cast<unsigned>(v) : static_cast<unsigned>(v);
  do {
    digits[n++] = static_cast<char>('0' + u % 10);
    u /= 10;
  } while (u != 0 && n < 11);
  while (n > 0 && pos < cap) buf[pos++] = digits[--n];
  return pos;
}

}  // namespace

int ThisThreadIndex() noexcept {
  static std::atomic<int> next{0};
  thread_local const int index = next.fetch_add(1, std::memory_order_relaxed);
  return index;
}

// ---- Record ----

TraceWriter::Record::Record(TraceWriter* writer, std::string* scratch)
    : writer_(writer), scratch_(scratch), line_(scratch) {}

TraceWriter::Record::Record(Record&& other) noexcept
    : writer_(other.writer_), scratch_(other.scratch_), line_(other.line_) {
  other.writer_ = nullptr;
  other.scratch_ = nullptr;
}

void TraceWriter::Record::Commit() noexcept {
  if (writer_ == nullptr) return;
  line_.Finish();
  writer_->Append(*scratch_);
  ReleaseScratch(scratch_);
  writer_ = nullptr;
  scratch_ = nullptr;
}

// ---- TraceWriter ----

std::unique_ptr<TraceWriter> TraceWriter::Open(const std::string& path, const Options& options,
                                               std::string* error) {
  // The opening thread is the main thread in practice: give it index 0 (no "tid").
  ThisThreadIndex();
  std::unique_ptr<ZstdCompressor> compressor;
  if (options.compression == TraceCompression::kZstd) {
#ifdef DSDIAG_HAVE_ZSTD
    std::string why;
    compressor = ZstdCompressor::Create(options.zstd_level, options.buffer_bytes + 4096, &why);
    if (!compressor) {
      if (error) *error = "cannot compress trace " + path + ": " + why;
      return nullptr;
    }
#else
    if (error)
      *error = "cannot compress trace " + path +
               ": built without zstd (install libzstd-dev and rebuild, or write it uncompressed)";
    return nullptr;
#endif
  }
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    if (error) *error = "cannot open trace file " + path + ": " + std::strerror(errno);
    return nullptr;
  }
  return std::unique_ptr<TraceWriter>(new TraceWriter(path, fd, options, std::move(compressor)));
}

TraceWriter::TraceWriter(std::string path, int fd, const Options& options,
                         std::unique_ptr<ZstdCompressor> compressor)
    : path_(std::move(path)), fd_(fd), options_(options), compressor_(std::move(compressor)) {
  // Reserved once so that appends never reallocate; a record larger than the whole
  // buffer still goes through (one reallocation, then it is written at once).
  buffer_.reserve(options_.buffer_bytes + 4096);
  if (options_.flush_interval_ms > 0) {
    try {
      flusher_ = std::thread([this] { FlusherLoop(); });
    } catch (const std::exception& e) {
      // Without the thread, records still reach the file at each Flush().
      std::fprintf(stderr, "dsdiag: trace %s: no flusher thread (%s)\n", path_.c_str(), e.what());
    }
  }
}

TraceWriter::~TraceWriter() {
  {
    std::lock_guard<std::mutex> guard(stop_mutex_);
    stop_.store(true);
  }
  stop_cv_.notify_all();
  if (flusher_.joinable()) flusher_.join();
  Flush();
#ifdef DSDIAG_HAVE_ZSTD
  // Without the frame's end a reader reports a truncated tail, as for a killed writer.
  if (compressor_ && !failed()) {
    if (const int err = compressor_->End(&TraceWriter::WriteToFile, this))
      ReportFailure(err, false);
  }
#endif
  ::close(fd_);
}

void TraceWriter::FlusherLoop() {
  // Looks four times an interval and writes what has waited an interval: a line reaches
  // the file at most 1.25 intervals after it was appended, and a process whose steps
  // flush more often than that (step boundaries) gets no write of the flusher's between.
  const int64_t interval_ns = int64_t{options_.flush_interval_ms} * 1000000;
  const auto tick = std::chrono::microseconds(std::max<int64_t>(1000, interval_ns / 4000));
  std::unique_lock<std::mutex> guard(stop_mutex_);
  while (!stop_.load()) {
    if (stop_cv_.wait_for(guard, tick, [this] { return stop_.load(); })) break;
    const int64_t oldest = oldest_ns_.load(std::memory_order_relaxed);
    if (oldest == 0 || MonotonicNs() - oldest < interval_ns) continue;
    guard.unlock();
    Flush();
    guard.lock();
  }
}

TraceWriter::Record TraceWriter::Begin(std::string_view type) noexcept {
  return BeginAt(type, MonotonicNs());
}

TraceWriter::Record TraceWriter::BeginAt(std::string_view type, int64_t ts_ns) noexcept {
  Record r(this, AcquireScratch());
  r.line_.Field(kFieldType, type).Field(kFieldTs, ts_ns).Field(kFieldStep, step());
  const int tid = ThisThreadIndex();
  if (tid != 0) r.line_.Field(kFieldTid, tid);
  return r;
}

void TraceWriter::WriteHeader(const TraceHeader& header) noexcept {
  std::string* scratch = AcquireScratch();
  try {
    AppendHeaderRecord(header, MonotonicNs(), scratch);
    Append(*scratch);
  } catch (...) {
    // Out of memory while formatting: the header is lost like any dropped record.
    dropped_.fetch_add(1, std::memory_order_relaxed);
  }
  ReleaseScratch(scratch);
}

void TraceWriter::NameThisThread(std::string_view name) noexcept {
  records::ThreadRecord thread;
  thread.name = name;
  AppendFields(thread, &Begin(thread.kType).line());
}

void TraceWriter::Lock() noexcept {
  // Holders only copy a line, or write a batch; spin briefly, then let the holder run.
  int spins = 0;
  while (lock_.test_and_set(std::memory_order_acquire)) {
    if (++spins > 100) std::this_thread::yield();
  }
}

void TraceWriter::Append(std::string_view line) noexcept {
  Lock();
  if (!failed()) {
    if (!buffer_.empty() && buffer_.size() + line.size() > options_.buffer_bytes) {
      WriteBufferLocked(false);
    }
  }
  if (failed()) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    Unlock();
    return;
  }
  if (buffer_.empty()) oldest_ns_.store(MonotonicNs(), std::memory_order_relaxed);
  buffer_.append(line);
  ++buffered_records_;
  if (buffer_.size() >= options_.buffer_bytes) WriteBufferLocked(false);
  Unlock();
}

void TraceWriter::EndOfStep() noexcept {
  // Compressed, each write ends a zstd block, and a block per step compresses better than
  // two (bench/README.md): the step's records go out with the next step's begin, or with
  // the flusher once they are flush_interval_ms old.
  if (!compressor_) Flush();
}

void TraceWriter::Flush() noexcept {
  Lock();
  if (!buffer_.empty()) WriteBufferLocked(false);
  Unlock();
}

void TraceWriter::FlushFromSignal() noexcept {
  // The interrupted code may hold the lock on this very thread: never wait for it.
  if (lock_.test_and_set(std::memory_order_acquire)) return;
  const int saved_errno = errno;
  if (!buffer_.empty()) WriteBufferLocked(true);
  errno = saved_errno;
  Unlock();
}

void TraceWriter::WriteBufferLocked(bool in_signal) noexcept {
  int err = 0;
  if (!failed()) {
#ifdef DSDIAG_HAVE_ZSTD
    if (compressor_) {
      err = compressor_->Compress(buffer_, &TraceWriter::WriteToFile, this);
    } else {
      err = WriteAll(buffer_.data(), buffer_.size());
    }
#else
    err = WriteAll(buffer_.data(), buffer_.size());
#endif
  }
  if (err == 0 && !failed()) {
    written_.fetch_add(buffered_records_, std::memory_order_relaxed);
  } else {
    dropped_.fetch_add(buffered_records_, std::memory_order_relaxed);
    if (err != 0) ReportFailure(err, in_signal);
  }
  buffer_.clear();
  buffered_records_ = 0;
  oldest_ns_.store(0, std::memory_order_relaxed);
}

int TraceWriter::WriteAll(const char* data, size_t size) noexcept {
  while (size > 0) {
    const ssize_t n = ::write(fd_, data, size);
    if (n > 0) {
      data += n;
      size -= static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      return n < 0 ? errno : EIO;  // a zero-byte write would loop forever
    }
  }
  return 0;
}

int TraceWriter::WriteToFile(void* writer, const char* data, size_t size) noexcept {
  return static_cast<TraceWriter*>(writer)->WriteAll(data, size);
}

void TraceWriter::ReportFailure(int err, bool in_signal) noexcept {
  if (failed_.exchange(true)) return;  // one message per writer
  if (!in_signal) {
    std::fprintf(stderr, "dsdiag: cannot write trace %s: %s; further records are dropped\n",
                 path_.c_str(), std::strerror(err));
    return;
  }
  // strerror and stdio are not async-signal-safe: report the errno number with write(2).
  char msg[512];
  const size_t cap = sizeof msg - 1;
  size_t n = AppendRaw(msg, 0, cap, "dsdiag: cannot write trace ");
  n = AppendRaw(msg, n, cap, path_.c_str());
  n = AppendRaw(msg, n, cap, ": errno ");
  n = AppendDecimal(msg, n, cap, err);
  n = AppendRaw(msg, n, cap, "; further records are dropped");
  msg[n++] = '\n';
  ssize_t ignored = ::write(STDERR_FILENO, msg, n);
  (void)ignored;
}

uint64_t TraceWriter::records_written() const noexcept {
  return written_.load(std::memory_order_relaxed);
}

uint64_t TraceWriter::records_dropped() const noexcept {
  return dropped_.load(std::memory_order_relaxed);
}

}  // namespace dsdiag::trace
