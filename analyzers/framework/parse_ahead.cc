#include "analyzers/framework/parse_ahead.h"

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "trace/record_batch.h"

namespace dsdiag::analyzers {
namespace {

// One entry of a chunk's sequence. Records of one rank in a row are one entry.
struct Event {
  enum class Kind : uint8_t { kRecords, kRankEnded, kStepDone, kProgress };
  Kind kind;
  size_t rank = 0;
  // kRecords: how many; kRankEnded, kProgress: the index in its list; kStepDone: the step.
  int64_t value = 0;
};

struct Chunk {
  trace::RecordBatch records;
  std::vector<Event> events;
  std::vector<RankEnd> ends;
  std::vector<DriveProgress> progress;
  bool last = false;         // the reading side has finished after this chunk
  std::exception_ptr error;  // with `last`: what it threw

  void Clear() {
    records.Clear();
    events.clear();
    ends.clear();
    progress.clear();
    last = false;
    error = nullptr;
  }
  // Sends the sequence to `to`, in order.
  void Replay(DriveSink& to) const {
    trace::RecordBatch::Cursor at;
    trace::Record record;
    trace::FieldIndex fields;
    for (const Event& e : events) {
      switch (e.kind) {
        case Event::Kind::kRecords:
          for (int64_t i = 0; i < e.value; ++i) {
            records.Next(&at, &record, &fields);
            to.Record(e.rank, record);
          }
          break;
        case Event::Kind::kRankEnded:
          to.RankEnded(e.rank, ends[static_cast<size_t>(e.value)]);
          break;
        case Event::Kind::kStepDone:
          to.StepDone(e.value);
          break;
        case Event::Kind::kProgress:
          to.Progress(progress[static_cast<size_t>(e.value)]);
          break;
      }
    }
  }
};

// Thrown on the reading thread when the driver thread gave up (it threw): unwinds `read`.
struct Cancelled {};

// The chunks and the hand-over between the two threads: full chunks go to the driver
// thread in order, replayed ones come back to be filled again.
class ChunkQueue {
 public:
  ChunkQueue() {
    for (auto& c : chunks_) {
      c = std::make_unique<Chunk>();
      free_.push_back(c.get());
    }
  }

  // Reading thread: a chunk to fill. While every chunk is in flight it sleeps until
  // kWakeChunks are free again, for the reason the driver thread does (TakeFull): when the
  // analyzers are the slower side, a wake-up per chunk replayed had the two threads
  // trading the lock and a futex call for each chunk.
  Chunk* TakeFree() {
    std::unique_lock<std::mutex> lock(mu_);
    if (free_.empty()) {
      reader_waits_ = true;
      to_reader_.wait(lock, [&] { return free_.size() >= kWakeChunks || cancelled_; });
      reader_waits_ = false;
    }
    if (cancelled_) throw Cancelled{};
    Chunk* c = free_.front();
    free_.pop_front();
    c->Clear();
    return c;
  }
  void PushFull(Chunk* c) {
    bool wake;
    {
      std::lock_guard<std::mutex> lock(mu_);
      full_.push_back(c);
      last_pushed_ |= c->last;
      wake = driver_waits_ && Enough();
    }
    if (wake) to_driver_.notify_one();
  }

  // Driver thread: the next full chunk. When there is none it sleeps until kWakeChunks are
  // full (or the last one is): the reading side is the longer thread, and a wake-up per
  // chunk (a futex call on each side, 3% of compare's CPU at 1,024 ranks) buys nothing
  // while the driver thread catches up on a few chunks at once anyway.
  Chunk* TakeFull() {
    std::unique_lock<std::mutex> lock(mu_);
    if (full_.empty()) {
      driver_waits_ = true;
      to_driver_.wait(lock, [&] { return Enough(); });
      driver_waits_ = false;
    }
    Chunk* c = full_.front();
    full_.pop_front();
    return c;
  }
  void GiveBack(Chunk* c) {
    bool wake;
    {
      std::lock_guard<std::mutex> lock(mu_);
      free_.push_back(c);
      wake = reader_waits_ && free_.size() >= kWakeChunks;
    }
    if (wake) to_reader_.notify_one();
  }
  void Cancel() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      cancelled_ = true;
    }
    to_reader_.notify_one();
  }

 private:
  // Each side sleeps until this many chunks are ready for it. At most a quarter of those in
  // flight, so that both cannot wait at once: the two waits need 2 x kWakeChunks of them
  // between the full and free lists, and all but the two in hand are there.
  static constexpr size_t kWakeChunks = 4;
  static_assert(2 * kWakeChunks + 2 <= kChunksInFlight);
  bool Enough() const { return full_.size() >= kWakeChunks || (last_pushed_ && !full_.empty()); }

  std::unique_ptr<Chunk> chunks_[kChunksInFlight];
  std::mutex mu_;
  std::condition_variable to_reader_;
  std::condition_variable to_driver_;
  std::deque<Chunk*> free_;
  std::deque<Chunk*> full_;
  bool driver_waits_ = false;  // the driver thread sleeps on to_driver_
  bool reader_waits_ = false;  // the reading thread sleeps on to_reader_
  bool last_pushed_ = false;   // the last chunk is among the full ones (or was)
  bool cancelled_ = false;
};

// The reading thread's sink: appends to the open chunk, queues it once it holds kChunkBytes.
class QueueingSink final : public DriveSink {
 public:
  QueueingSink(ChunkQueue* queue, size_t chunk_bytes)
      : queue_(queue), chunk_bytes_(chunk_bytes), open_(TakeFree()) {}

  void Record(size_t rank, const trace::Record& record) override {
    std::vector<Event>& events = open_->events;
    if (!events.empty() && events.back().kind == Event::Kind::kRecords &&
        events.back().rank == rank) {
      ++events.back().value;
    } else {
      events.push_back({Event::Kind::kRecords, rank, 1});
    }
    open_->records.Append(record);
    if (open_->records.bytes() >= chunk_bytes_) Send();
  }
  void RankEnded(size_t rank, const RankEnd& end) override {
    open_->events.push_back(
        {Event::Kind::kRankEnded, rank, static_cast<int64_t>(open_->ends.size())});
    open_->ends.push_back(end);
  }
  void StepDone(int64_t step) override {
    open_->events.push_back({Event::Kind::kStepDone, 0, step});
  }
  void Progress(const DriveProgress& progress) override {
    open_->events.push_back(
        {Event::Kind::kProgress, 0, static_cast<int64_t>(open_->progress.size())});
    open_->progress.push_back(progress);
  }

  // The last chunk, with what the reading side threw (null: nothing).
  void Finish(std::exception_ptr error) {
    open_->last = true;
    open_->error = std::move(error);
    queue_->PushFull(open_);
    open_ = nullptr;
  }

 private:
  void Send() {
    queue_->PushFull(open_);
    open_ = TakeFree();
  }
  // A chunk to fill, its copies' memory allocated whole: a chunk is sent once it holds
  // chunk_bytes_, so what it takes past that is one record (the slack covers records to
  // 64 KiB; a longer one regrows the batch).
  Chunk* TakeFree() {
    Chunk* c = queue_->TakeFree();
    c->records.Reserve(chunk_bytes_ + kRecordSlackBytes);
    return c;
  }
  static constexpr size_t kRecordSlackBytes = size_t{64} << 10;

  ChunkQueue* queue_;
  const size_t chunk_bytes_;
  Chunk* open_;
};

void ReadingThread(const std::function<void(DriveSink&)>& read, ChunkQueue* queue,
                   size_t chunk_bytes) {
  // Takes a chunk at once: every one is free yet, nothing to wait for.
  QueueingSink sink(queue, chunk_bytes);
  try {
    read(sink);
    sink.Finish(nullptr);
  } catch (const Cancelled&) {
    // The driver thread has stopped replaying: nobody waits for the rest.
  } catch (...) {
    sink.Finish(std::current_exception());
  }
}

}  // namespace

void DriveParseAhead(const std::function<void(DriveSink&)>& read, DriveSink& to,
                     size_t chunk_bytes) {
  ChunkQueue queue;
  std::thread reader(ReadingThread, std::cref(read), &queue, chunk_bytes);
  try {
    for (;;) {
      Chunk* c = queue.TakeFull();
      c->Replay(to);
      if (c->last) {
        const std::exception_ptr error = c->error;
        queue.GiveBack(c);
        reader.join();
        if (error) std::rethrow_exception(error);
        return;
      }
      queue.GiveBack(c);
    }
  } catch (...) {
    queue.Cancel();
    if (reader.joinable()) reader.join();
    throw;
  }
}

}  // namespace dsdiag::analyzers
