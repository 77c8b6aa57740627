// EventSpool: where `dsdiag timeline` keeps each rank's events while it reads every trace
// once, until it can write them.
//
// Two things are unknown until every trace has been read: the origin (the earliest time the
// timeline shows, which every "ts" is relative to, and which a finding can move earlier)
// and, for a collective, when its last rank entered (its `wait`). So an event is formatted
// here as Chrome Trace JSON with those numbers left out — the text before "ts", the text
// between "ts" and "dur", the args up to where `wait` goes — plus the absolute times, and
// the numbers are spliced in when the spool is replayed into the ChromeTraceWriter. The
// replayed bytes are exactly what writing the event directly would have given.
//
// Written the way a tracing library writes events: the text goes straight into the rank's
// buffer (event_buffer.h), and a track's fixed part — a counter's or a phase's or a
// collective op's text up to its ts — is formatted once as a head that its events refer to
// by index; an event keeps only the numbers it has. Most of the spool is then the args.
//
// Each rank's events are kept in order in a buffer of its own; a full buffer goes to one
// unlinked temporary file as a chunk, so memory is bounded by the buffers (a budget shared
// by the ranks), not by the run. Replay reads each rank's chunks back in order: ranks are
// written one after the other, as viewers list them.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "timeline/chrome_trace_writer.h"
#include "timeline/collective_index.h"
#include "timeline/event_buffer.h"

namespace dsdiag::timeline {

class SpoolFile;

// One rank's events. Mirrors ChromeTraceWriter's calls; times are rank 0's clock, absolute.
class RankSpool {
 public:
  // One event being built; complete when it goes out of scope, like ChromeTraceWriter's.
  class Event {
   public:
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;
    Event(Event&& other) noexcept : spool_(other.spool_), args_(other.args_) {
      other.spool_ = nullptr;
    }
    ~Event();
    EventArgs& Args() {
      spool_->buffer_.Append(ChromeTraceWriter::kArgsOpen);
      return args_;
    }
    void EndArgs() { spool_->buffer_.Append('}'); }
    // Call inside the args, last: `wait`, `last` and `ranks` of collective (pg, seq) go here
    // when the replay finds it in the collective index (wait: the last enter minus this
    // span's start, clamped to [0, dur]).
    void WaitOf(int64_t pg, int64_t seq);

   private:
    friend class RankSpool;
    explicit Event(RankSpool* spool) : spool_(spool), args_(&spool->buffer_) {}
    RankSpool* spool_;  // null once moved from
    EventArgs args_;
  };

  Event Complete(std::string_view name, std::string_view category, int pid, int64_t tid,
                 int64_t ts_ns, int64_t dur_ns);
  Event Instant(std::string_view name, std::string_view category, char scope, int pid, int64_t tid,
                int64_t ts_ns);
  void Counter(std::string_view name, int pid, int64_t ts_ns, double value);
  Event Metadata(std::string_view name, int pid, int64_t tid);

  // A track's fixed head, formatted once and kept by the spool: its events' text up to
  // their ts (`{"ph":"C","name":"loss","pid":3,"tid":0,"ts":`). An event written with a
  // head stores the head's index, not its text, and the replay copies the head back.
  using Head = uint32_t;
  Head CompleteHead(std::string_view name, std::string_view category, int pid, int64_t tid);
  Head CounterHead(std::string_view name, int pid);
  Event Complete(Head head, int64_t ts_ns, int64_t dur_ns);
  void Counter(Head head, int64_t ts_ns, double value);
  // A sample of ns given in ms (PutMillis: the number of value / 1e6, exactly).
  void CounterMillis(Head head, int64_t ts_ns, int64_t value_ns);

  int64_t events() const { return events_; }

 private:
  friend class SpoolFile;
  static constexpr uint32_t kNone = UINT32_MAX;  // no head, no splice

  explicit RankSpool(SpoolFile* file);
  // Starts an event in buffer_: room for its header, its text after it. `head`: the track's
  // head or kNone; `ts`, `dur`: whether it has those numbers.
  void Open(Head head, bool ts, bool dur, uint8_t value_kind = 0);
  uint32_t Here() const;  // the offset in the event's text that the next byte will have
  void Committed();       // the event is complete: its header (and trailer) are written
  Head AddHead(const EventBuffer& text);
  void HeadCounter(Head head, int64_t ts_ns, uint8_t value_kind, int64_t value);

  // An event as the replay needs it. In buffer_ and in the file it is packed: a flags byte
  // and `text_size`, then only the numbers it has (a head's events splice their ts at 0,
  // which is not stored), then the text, then pg, seq and wait_at when it has a wait. A
  // head's counter sample takes 25 bytes and no text, not sizeof(Entry) and its text.
  struct Entry {
    int64_t ts_ns = 0;  // absolute; the "ts" spliced in at text offset ts_at
    int64_t dur_ns = 0;
    int64_t pg = 0, seq = 0;  // the collective whose wait goes at wait_at
    uint32_t text_size = 0;
    uint32_t head = kNone;  // heads_[head] goes before the text
    uint32_t ts_at = kNone, dur_at = kNone, wait_at = kNone;
    // A counter sample of a head keeps its value, not its text: kValueDouble's bits or
    // kValueMillis' ns, formatted by the replay.
    uint8_t value_kind = 0;
    int64_t value = 0;
  };
  static constexpr uint8_t kValueDouble = 16, kValueMillis = 32;  // flags bits
  // The packed entry at `at` of `entries` into *e, its text into *text; returns where the
  // next one starts, or 0 when none starts there.
  static size_t Unpack(std::string_view entries, size_t at, Entry* e, std::string_view* text);
  static size_t HeaderSize(uint8_t flags);
  uint8_t Flags() const;

  SpoolFile* file_;
  Entry entry_;          // the numbers of the event being built...
  size_t entry_at_ = 0;  // ...whose header goes at this offset of buffer_...
  size_t text_at_ = 0;   // ...and its text at this one
  EventBuffer buffer_;   // entries not yet in the file (the last one maybe being built)
  std::vector<std::pair<uint64_t, uint64_t>> chunks_;  // (offset, size) in the file, in order
  std::string head_text_;                              // the heads, one after the other
  std::vector<std::pair<uint32_t, uint32_t>> heads_;   // (offset, size) in head_text_
  int64_t events_ = 0;
};

// The spool of every rank of one timeline, and its temporary file.
class SpoolFile {
 public:
  // The temporary file goes in `dir` (made and unlinked at once; nothing is left behind);
  // `ranks` spools share `memory_budget` bytes of buffers. Throws std::runtime_error when
  // the file cannot be made.
  SpoolFile(const std::string& dir, size_t ranks, size_t memory_budget = kDefaultBudget);
  ~SpoolFile();
  SpoolFile(const SpoolFile&) = delete;
  SpoolFile& operator=(const SpoolFile&) = delete;

  RankSpool* rank(size_t i) { return ranks_[i].get(); }

  // Writes rank i's events, in order, relative to `origin_ns`, with collective waits from
  // `collectives`. Throws std::runtime_error when the file cannot be read back.
  void Replay(size_t i, const CollectiveIndex& collectives, int64_t origin_ns,
              ChromeTraceWriter* out);

  // Small on purpose: buffers that fit in the caches and whose pages are reused chunk after
  // chunk cost less than a large budget's fresh pages, which the kernel must fault in and
  // zero, even though more goes through the file. 128 ranks x 1,000 steps (synth, ~180 MB
  // of spool): 8 MiB 1.58-1.67 s CPU, 64 MiB 1.96-2.23 s (sys 0.25-0.35 s against
  // 0.57-0.91), peak RSS 177 MB against 230.
  static constexpr size_t kDefaultBudget = size_t{8} << 20;

 private:
  friend class RankSpool;
  void Flush(RankSpool* spool);  // its buffer to the file, as a chunk
  void ReplayEntries(const RankSpool& spool, std::string_view entries,
                     const CollectiveIndex& collectives, int64_t origin_ns, ChromeTraceWriter* out);

  int fd_ = -1;
  uint64_t size_ = 0;        // bytes in the file
  size_t buffer_limit_ = 0;  // per rank
  std::vector<std::unique_ptr<RankSpool>> ranks_;
  std::string read_buffer_;
};

}  // namespace dsdiag::timeline
