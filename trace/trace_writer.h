// TraceWriter: appends records to one rank's JSON Lines trace.
//
// Several threads write (main loop, loader workers, watchdog). Each record is formatted
// into a thread-local scratch string, then appended whole to a shared buffer under a
// spin lock; the buffer goes to the file with one write(2) per batch of whole lines, at
// step boundaries (Flush, EndOfStep) and from a flusher thread once the oldest buffered
// line is `flush_interval_ms` old (it looks four times an interval: a line waits at most
// 1.25 intervals). So a process killed at any instant leaves whole lines plus at most one
// partial last line.
//
// With Options::compression = kZstd each batch is compressed (zstd, one flushed block per
// batch) just before its write(2): after a kill the file holds whole flushed blocks, which
// decode to whole lines (see trace/zstd_stream.h); the destructor ends the zstd frame.
//
// Write errors (ENOSPC, EIO, ...) are reported once on stderr; from then on records are
// counted as dropped and training goes on. Nothing here throws into the caller.
//
//   auto w = TraceWriter::Open("run/rank-00000.jsonl", {}, &err);
//   w->WriteHeader(header);
//   { auto r = w->Begin(rec::kStep); r.line().Field("loss", 2.5); }  // committed here
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "trace/compression.h"
#include "trace/json_line.h"
#include "trace/trace_header.h"

namespace dsdiag::trace {

class ZstdCompressor;

class TraceWriter {
 public:
  struct Options {
    size_t buffer_bytes = size_t{1} << 20;  // a full buffer is written at once
    int flush_interval_ms = 100;            // 0: no flusher thread (tests)
    // kZstd: name the file `rank-<R>.jsonl.zst` (RankTraceFileName). Open fails in a
    // build without libzstd.
    TraceCompression compression = TraceCompression::kNone;
    // 1..19. Each write is a zstd block of about a step: a light trace's step (about 1 KB)
    // takes 246 bytes at 17 against 278 at 1, for about 140 us of CPU per block against 16
    // (bench/README.md), within a 1.1 MB compressor (zstd_stream.cc).
    int zstd_level = 17;
  };

  // One record being built; appends itself to the writer when it goes out of scope.
  class Record {
   public:
    Record(const Record&) = delete;
    Record& operator=(const Record&) = delete;
    Record(Record&& other) noexcept;
    ~Record() { Commit(); }
    JsonLine& line() { return line_; }
    void Commit() noexcept;

   private:
    friend class TraceWriter;
    Record(TraceWriter* writer, std::string* scratch);
    TraceWriter* writer_;
    std::string* scratch_;
    JsonLine line_;
  };

  // Creates (truncates) `path`. Returns null and sets *error on failure.
  static std::unique_ptr<TraceWriter> Open(const std::string& path, const Options& options,
                                           std::string* error);
  ~TraceWriter();  // flushes and stops the flusher

  // Starts a record {"type":T,"ts":now,"step":current[,"tid":n] ...}; add fields to line().
  Record Begin(std::string_view type) noexcept;
  // Same with an explicit start time (span records: ts = start, plus a "dur" field).
  Record BeginAt(std::string_view type, int64_t ts_ns) noexcept;

  void WriteHeader(const TraceHeader& header) noexcept;

  // The step stamped on records from now on (any thread).
  void SetStep(int64_t step) noexcept { step_.store(step, std::memory_order_relaxed); }
  int64_t step() const noexcept { return step_.load(std::memory_order_relaxed); }

  // Writes a `thread` record naming the calling thread (shown as a track in timelines).
  void NameThisThread(std::string_view name) noexcept;

  // Writes every whole line buffered so far.
  void Flush() noexcept;
  // A step ended: plain, Flush(); compressed, nothing (one zstd block per step rather than
  // two: the lines go out with the next Flush, at the latest the flusher's).
  void EndOfStep() noexcept;
  // Async-signal-safe: writes what is buffered unless another thread holds the buffer at
  // this instant (then that thread's flush will carry it). Never blocks, never allocates.
  // Compressed, the batch is compressed here too: libzstd allocates its workspace when a
  // frame starts, which Open does, and then compresses into the writer's preallocated
  // buffer with no allocation, lock or I/O of its own.
  void FlushFromSignal() noexcept;

  const std::string& path() const { return path_; }
  bool failed() const noexcept { return failed_.load(std::memory_order_relaxed); }
  uint64_t records_written() const noexcept;
  uint64_t records_dropped() const noexcept;

 private:
  TraceWriter(std::string path, int fd, const Options& options,
              std::unique_ptr<ZstdCompressor> compressor);
  void Append(std::string_view line) noexcept;
  void Lock() noexcept;
  void Unlock() noexcept { lock_.clear(std::memory_order_release); }
  // Writes buffer_ with the lock held. `in_signal`: only async-signal-safe calls.
  void WriteBufferLocked(bool in_signal) noexcept;
  // write(2) of all of `data`, retrying short writes; 0 or the errno.
  int WriteAll(const char* data, size_t size) noexcept;
  static int WriteToFile(void* writer, const char* data, size_t size) noexcept;
  void ReportFailure(int err, bool in_signal) noexcept;
  void FlusherLoop();

  const std::string path_;
  const int fd_;
  const Options options_;
  const std::unique_ptr<ZstdCompressor> compressor_;  // null: plain JSON Lines
  std::atomic<int64_t> step_{0};
  std::atomic_flag lock_ = ATOMIC_FLAG_INIT;
  std::string buffer_;             // whole lines not yet written; guarded by lock_
  uint64_t buffered_records_ = 0;  // guarded by lock_
  // MonotonicNs of the first line buffered since the last write; 0: nothing buffered.
  // Written under lock_, read by the flusher without it (a stale read only delays a look).
  std::atomic<int64_t> oldest_ns_{0};
  std::atomic<uint64_t> written_{0};
  std::atomic<uint64_t> dropped_{0};
  std::atomic<bool> failed_{false};
  std::atomic<bool> stop_{false};
  std::mutex stop_mutex_;  // with stop_cv_: wakes the flusher early to stop
  std::condition_variable stop_cv_;
  std::thread flusher_;
};

// Small index of the calling thread, 0 for the first thread that asked (the main
// thread, in practice: it opens the writer), then 1, 2, ...
int ThisThreadIndex() noexcept;

}  // namespace dsdiag::trace
