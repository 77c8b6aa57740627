#include "analyzers/framework/threaded_lockstep.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <string>
#include <thread>

#include "analyzers/framework/input_error.h"
#include "trace/trace_reader.h"

namespace dsdiag::analyzers {
namespace {

// ---- Lockstep with reader threads ----
//
// A rank's records are cut into segments: the records one lockstep turn delivers. A turn
// at step s delivers a rank's records while their step is <= s, and s is never above a
// rank's looked-ahead record, so a turn starts at the record whose step is s: a segment is
// a record and the following ones up to the first of a higher step. That depends on the
// rank's file alone, so a reader thread can cut it ahead of the driver. A segment holds at
// most kSegmentRecords (a file whose steps never rise would be one segment); the rest of
// the turn follows in "continued" segments that carry the same step.

constexpr size_t kQueueDepth = 3;        // segments queued per rank
constexpr size_t kSegmentRecords = 256;  // records per segment at most

struct Segment {
  std::vector<trace::OwnedRecord> records;  // the first `count`; the rest are kept for reuse
  size_t count = 0;
  int64_t step = 0;        // the turn that delivers it
  bool last = false;       // the rank's file ends after it
  int64_t bytes_read = 0;  // by the rank's reader so far (progress)
  RankEnd reader_end;      // when `last`: lines, bytes, issues
};

// One rank's segments: a ring that its reader thread fills and the driver empties.
struct RankQueue {
  const RankInfo* info = nullptr;
  std::unique_ptr<trace::TraceReader> reader;  // the reader thread's once started
  trace::OwnedRecord ahead;                    // the reader thread's look-ahead record
  bool continued = false;                      // the next segment continues `head`
  int64_t head = 0;
  std::array<Segment, kQueueDepth> ring;
  std::atomic<size_t> produced{0};  // segments queued: bumped by the reader thread
  std::atomic<size_t> consumed{0};  // segments given back: bumped by the driver
  bool reader_done = false;         // the last segment is queued (reader thread only)
  int owner = 0;                    // the reader thread's index
  // The driver's side.
  bool ended = false;
  RankEnd end;
  int64_t bytes_read = 0;
};

bool NextEvent(trace::TraceReader* reader, trace::OwnedRecord* out) {
  bool ok = reader->NextOwned(out);
  while (ok && IsLineOneHeader(out->record())) ok = reader->NextOwned(out);
  return ok;
}

// Parses the next segment of `q` into *seg (reader thread; `ahead` holds its first record).
void FillSegment(RankQueue* q, Segment* seg) {
  if (!q->continued) q->head = q->ahead.record().step();
  q->continued = false;
  seg->step = q->head;
  seg->count = 0;
  seg->last = false;
  for (;;) {
    if (seg->records.size() == seg->count) seg->records.emplace_back();
    std::swap(seg->records[seg->count++], q->ahead);
    if (!NextEvent(q->reader.get(), &q->ahead)) {
      seg->last = true;
      break;
    }
    if (q->ahead.record().step() > q->head) break;
    if (seg->count == kSegmentRecords) {
      q->continued = true;
      break;
    }
  }
  seg->bytes_read = q->reader->bytes_read();
  if (seg->last) {
    TakeReaderEnd(*q->reader, &seg->reader_end);
    q->reader.reset();
  }
}

// Reader threads, each filling the queues of every n-th rank, and the driver's side of the
// queues. Errors on a reader thread (memory) are rethrown on the driver thread.
//
// The queues' counters are atomics, so neither side locks per segment; the mutex is for
// sleeping. Wake-ups are what costs on a busy machine, so they are batched: a reader thread
// that has filled its queues sleeps until the driver has taken half a step's worth of
// segments, or until the driver waits on one of its ranks.
class ReaderPool {
 public:
  ReaderPool(std::vector<RankQueue>* queues, int threads)
      : wake_after_(std::max<size_t>(1, queues->size() / 2)) {
    for (int t = 0; t < threads; ++t) {
      std::vector<RankQueue*> mine;
      for (size_t i = static_cast<size_t>(t); i < queues->size();
           i += static_cast<size_t>(threads)) {
        RankQueue& q = (*queues)[i];
        q.owner = t;
        if (!q.ended) mine.push_back(&q);
      }
      threads_.emplace_back([this, t, mine] { Run(t, mine); });
    }
  }

  ~ReaderPool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    to_readers_.notify_all();
    for (auto& t : threads_) t.join();
  }

  // The rank's next segment, once its reader thread has queued it.
  const Segment& Front(RankQueue* q) {
    const size_t consumed = q->consumed.load(std::memory_order_relaxed);
    if (q->produced.load() == consumed) {
      std::unique_lock<std::mutex> lock(mu_);
      waiting_for_.store(q);
      to_readers_.notify_all();
      to_driver_.wait(lock, [&] { return q->produced.load() != consumed || error_; });
      waiting_for_.store(nullptr);
      if (q->produced.load() == consumed) std::rethrow_exception(error_);
    }
    return q->ring[consumed % kQueueDepth];
  }

  // Gives the front segment back to the reader thread.
  void Pop(RankQueue* q) {
    q->consumed.fetch_add(1);
    const size_t pops = pops_.fetch_add(1) + 1;
    if (pops < wake_at_.load()) return;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (pops < wake_at_.load()) return;
      wake_at_.store(SIZE_MAX);
    }
    to_readers_.notify_all();
  }

 private:
  // Fills every free slot of the queues; false when none had room.
  bool FillAll(const std::vector<RankQueue*>& mine, size_t* open) {
    bool filled = false;
    for (RankQueue* q : mine) {
      while (!q->reader_done &&
             q->produced.load(std::memory_order_relaxed) - q->consumed.load() < kQueueDepth) {
        // The driver leaves a slot alone until `produced` counts it.
        Segment& seg = q->ring[q->produced.load(std::memory_order_relaxed) % kQueueDepth];
        FillSegment(q, &seg);
        if (seg.last) {
          q->reader_done = true;
          --*open;
        }
        q->produced.fetch_add(1);
        filled = true;
        if (waiting_for_.load() == q) {
          { std::lock_guard<std::mutex> lock(mu_); }  // the driver is in wait() or re-checks
          to_driver_.notify_one();
        }
      }
    }
    return filled;
  }

  void Run(int me, const std::vector<RankQueue*>& mine) {
    try {
      size_t open = mine.size();
      while (open > 0) {
        FillAll(mine, &open);
        if (open == 0) return;
        std::unique_lock<std::mutex> lock(mu_);
        const size_t target = pops_.load() + wake_after_;
        for (;;) {
          if (stop_) return;
          const RankQueue* waited = waiting_for_.load();
          // The driver waits on a queue of ours that is still empty (once filled, the
          // driver may take a while to clear waiting_for_: no spinning meanwhile).
          const bool starving =
              waited && waited->owner == me && waited->produced.load() == waited->consumed.load();
          if (pops_.load() >= target || starving) break;
          if (target < wake_at_.load()) wake_at_.store(target);
          to_readers_.wait(lock);
        }
      }
    } catch (...) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (!error_) error_ = std::current_exception();
      }
      to_driver_.notify_one();
    }
  }

  const size_t wake_after_;  // pops an idle reader thread sleeps through
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable to_driver_;   // the awaited segment was queued, or a reader failed
  std::condition_variable to_readers_;  // segments were given back, the driver waits, or stop
  bool stop_ = false;                   // guarded by mu_
  std::exception_ptr error_;            // guarded by mu_
  std::atomic<const RankQueue*> waiting_for_{nullptr};  // the queue the driver waits on
  std::atomic<size_t> pops_{0};                         // segments given back so far
  std::atomic<size_t> wake_at_{SIZE_MAX};  // pops_ at which to wake idle reader threads
};

void OpenQueue(RankQueue* q) {
  std::string error;
  q->reader = trace::TraceReader::Open(q->info->path, &error);
  if (!q->reader) throw RunInputError("cannot read trace '" + q->info->path + "': " + error);
  q->reader->SkipHeader(q->info->header);
  q->end.records = 1;  // the header, read by the loader already
  if (!NextEvent(q->reader.get(), &q->ahead)) {
    // Nothing past the header: the rank ends before the first step.
    TakeReaderEnd(*q->reader, &q->end);
    q->reader.reset();
    q->ended = true;
  }
}

// Delivers the segments of `q` that belong to the turn of `step`; ends the rank when its
// file runs out.
void DeliverQueued(RankQueue* q, int64_t step, const Dispatch& dispatch, ReaderPool* pool,
                   RankEnd* end_out) {
  while (!q->ended) {
    const Segment& seg = pool->Front(q);
    if (seg.step > step) return;
    for (size_t i = 0; i < seg.count; ++i) {
      const trace::Record& r = seg.records[i].record();
      dispatch.Record(*q->info, r);
      ObserveRecord(r, &q->end);
    }
    q->bytes_read = seg.bytes_read;
    if (seg.last) {
      AddReaderEnd(seg.reader_end, &q->end);
      q->ended = true;
    }
    pool->Pop(q);
    if (q->ended) {
      *end_out = q->end;
      dispatch.RankEnded(*q->info, *end_out);
    }
  }
}

}  // namespace

void DriveLockstepThreaded(const RunContext& run, const Dispatch& dispatch,
                           const DriveOptions& options, int threads, DriveResult* result) {
  std::vector<RankQueue> queues(run.ranks.size());
  for (size_t i = 0; i < queues.size(); ++i) {
    queues[i].info = &run.ranks[i];
    OpenQueue(&queues[i]);
  }
  for (size_t i = 0; i < queues.size(); ++i) {
    if (!queues[i].ended) continue;
    result->ends[i] = queues[i].end;
    dispatch.RankEnded(*queues[i].info, result->ends[i]);
  }
  ReaderPool pool(&queues, threads);
  for (;;) {
    bool any = false;
    int64_t step = 0;
    for (RankQueue& q : queues) {
      if (q.ended) continue;
      const int64_t next = pool.Front(&q).step;
      step = any ? std::min(step, next) : next;
      any = true;
    }
    if (!any) break;
    for (size_t i = 0; i < queues.size(); ++i)
      DeliverQueued(&queues[i], step, dispatch, &pool, &result->ends[i]);
    dispatch.StepDone(step);
    ++result->steps_done;
    if (options.progress) {
      DriveProgress p;
      p.step = step;
      for (const RankQueue& q : queues) p.bytes_read += q.ended ? q.end.bytes_read : q.bytes_read;
      options.progress(p);
    }
  }
}
}  // namespace dsdiag::analyzers
