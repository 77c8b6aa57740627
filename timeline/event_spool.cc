#include "timeline/event_spool.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace dsdiag::timeline {
namespace {

// Per-rank buffers: big enough that a chunk is a few pages, small enough that 16,384
// selected ranks stay within the budget.
constexpr size_t kMinBuffer = size_t{4} << 10;
constexpr size_t kMaxBuffer = size_t{1} << 20;

// The flags byte of a packed entry: which numbers follow it.
constexpr uint8_t kHasHead = 1, kHasTs = 2, kHasDur = 4, kHasWait = 8;

template <typename T>
char* Put(char* p, T v) {
  std::memcpy(p, &v, sizeof v);
  return p + sizeof v;
}
template <typename T>
const char* Get(const char* p, T* v) {
  std::memcpy(v, p, sizeof *v);
  return p + sizeof *v;
}

}  // namespace

// ---- RankSpool::Event ----

RankSpool::Event::~Event() {
  if (!spool_) return;
  spool_->buffer_.Append(ChromeTraceWriter::kEnd);
  spool_->Committed();
}

void RankSpool::Event::WaitOf(int64_t pg, int64_t seq) {
  spool_->entry_.pg = pg;
  spool_->entry_.seq = seq;
  spool_->entry_.wait_at = spool_->Here();
}

// ---- RankSpool ----

RankSpool::RankSpool(SpoolFile* file) : file_(file) {
  // A flush comes at the first event past the limit: room for that event too. Pages that
  // are never written cost no memory.
  buffer_.Reserve(file_->buffer_limit_ + kMinBuffer);
}

void RankSpool::Open(Head head, bool ts, bool dur, uint8_t value_kind) {
  entry_.head = head;
  entry_.value_kind = value_kind;
  if (ts) entry_.ts_at = 0;  // the Open* caller sets it when there is no head
  if (dur) entry_.dur_at = 0;
  entry_at_ = buffer_.size();
  const size_t header = HeaderSize(Flags());
  buffer_.Commit(buffer_.Room(header) + header);  // filled in by Committed
  text_at_ = buffer_.size();
}

uint8_t RankSpool::Flags() const {
  return (entry_.head != kNone ? kHasHead : 0) | (entry_.ts_at != kNone ? kHasTs : 0) |
         (entry_.dur_at != kNone ? kHasDur : 0) | (entry_.wait_at != kNone ? kHasWait : 0) |
         entry_.value_kind;
}

size_t RankSpool::HeaderSize(uint8_t flags) {
  size_t size = 1 + sizeof(uint32_t);  // flags, text_size
  if (flags & kHasHead) size += sizeof(uint32_t);
  if (flags & kHasTs) size += sizeof(int64_t) + ((flags & kHasHead) ? 0 : sizeof(uint32_t));
  if (flags & kHasDur) size += sizeof(int64_t) + sizeof(uint32_t);
  if (flags & (kValueDouble | kValueMillis)) size += sizeof(int64_t);
  return size;
}

uint32_t RankSpool::Here() const { return static_cast<uint32_t>(buffer_.size() - text_at_); }

RankSpool::Event RankSpool::Complete(std::string_view name, std::string_view category, int pid,
                                     int64_t tid, int64_t ts_ns, int64_t dur_ns) {
  Open(kNone, true, true);
  ChromeTraceWriter::AppendCompleteHead(&buffer_, name, category, pid, tid);
  entry_.ts_at = Here();
  buffer_.Append(ChromeTraceWriter::kDur);
  entry_.dur_at = Here();
  entry_.ts_ns = ts_ns;
  entry_.dur_ns = dur_ns;
  return Event(this);
}

RankSpool::Event RankSpool::Complete(Head head, int64_t ts_ns, int64_t dur_ns) {
  Open(head, true, true);
  buffer_.Append(ChromeTraceWriter::kDur);
  entry_.dur_at = Here();
  entry_.ts_ns = ts_ns;
  entry_.dur_ns = dur_ns;
  return Event(this);
}

RankSpool::Event RankSpool::Instant(std::string_view name, std::string_view category, char scope,
                                    int pid, int64_t tid, int64_t ts_ns) {
  Open(kNone, true, false);
  ChromeTraceWriter::AppendHead(&buffer_, 'i', name, pid, tid);
  buffer_.Append(ChromeTraceWriter::kCategory);
  buffer_.Quoted(category);
  buffer_.Append(ChromeTraceWriter::kScope);
  buffer_.Quoted(std::string_view(&scope, 1));
  buffer_.Append(ChromeTraceWriter::kTs);
  entry_.ts_at = Here();
  entry_.ts_ns = ts_ns;
  return Event(this);
}

void RankSpool::Counter(std::string_view name, int pid, int64_t ts_ns, double value) {
  Open(kNone, true, false);
  ChromeTraceWriter::AppendCounterHead(&buffer_, name, pid);
  entry_.ts_at = Here();
  entry_.ts_ns = ts_ns;
  buffer_.Append(ChromeTraceWriter::kCounterValue);
  buffer_.Double(value);
  buffer_.Append(ChromeTraceWriter::kCounterEnd);
  Committed();
}

void RankSpool::HeadCounter(Head head, int64_t ts_ns, uint8_t value_kind, int64_t value) {
  Open(head, true, false, value_kind);
  entry_.ts_ns = ts_ns;
  entry_.value = value;
  Committed();
}

void RankSpool::Counter(Head head, int64_t ts_ns, double value) {
  int64_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  HeadCounter(head, ts_ns, kValueDouble, bits);
}

void RankSpool::CounterMillis(Head head, int64_t ts_ns, int64_t value_ns) {
  HeadCounter(head, ts_ns, kValueMillis, value_ns);
}

RankSpool::Event RankSpool::Metadata(std::string_view name, int pid, int64_t tid) {
  // As ChromeTraceWriter::Metadata: a ts of 0, which no origin changes.
  Open(kNone, false, false);
  ChromeTraceWriter::AppendHead(&buffer_, 'M', name, pid, tid);
  buffer_.Append(ChromeTraceWriter::kTs);
  buffer_.Append('0');
  return Event(this);
}

RankSpool::Head RankSpool::AddHead(const EventBuffer& text) {
  heads_.emplace_back(static_cast<uint32_t>(head_text_.size()), static_cast<uint32_t>(text.size()));
  head_text_.append(text.data(), text.size());
  return static_cast<Head>(heads_.size() - 1);
}

RankSpool::Head RankSpool::CompleteHead(std::string_view name, std::string_view category, int pid,
                                        int64_t tid) {
  EventBuffer text;
  ChromeTraceWriter::AppendCompleteHead(&text, name, category, pid, tid);
  return AddHead(text);
}

RankSpool::Head RankSpool::CounterHead(std::string_view name, int pid) {
  EventBuffer text;
  ChromeTraceWriter::AppendCounterHead(&text, name, pid);
  return AddHead(text);
}

void RankSpool::Committed() {
  entry_.text_size = Here();
  const uint8_t flags = Flags();
  if (flags & kHasWait) {
    char* p = buffer_.Room(2 * sizeof(int64_t) + sizeof(uint32_t));
    buffer_.Commit(Put(Put(Put(p, entry_.pg), entry_.seq), entry_.wait_at));
  }
  char* p = Put(Put(buffer_.data() + entry_at_, flags), entry_.text_size);
  if (flags & kHasHead) p = Put(p, entry_.head);
  if (flags & kHasTs) {
    p = Put(p, entry_.ts_ns);
    if (!(flags & kHasHead)) p = Put(p, entry_.ts_at);
  }
  if (flags & kHasDur) p = Put(Put(p, entry_.dur_ns), entry_.dur_at);
  if (flags & (kValueDouble | kValueMillis)) Put(p, entry_.value);
  entry_ = Entry{};
  ++events_;
  if (buffer_.size() >= file_->buffer_limit_) file_->Flush(this);
}

size_t RankSpool::Unpack(std::string_view entries, size_t at, Entry* e, std::string_view* text) {
  if (at + 1 + sizeof(uint32_t) > entries.size()) return 0;
  const char* p = entries.data() + at;
  uint8_t flags = 0;
  p = Get(Get(p, &flags), &e->text_size);
  if (at + HeaderSize(flags) > entries.size()) return 0;
  *e = Entry{0, 0, 0, 0, e->text_size};
  if (flags & kHasHead) p = Get(p, &e->head);
  if (flags & kHasTs) {
    p = Get(p, &e->ts_ns);
    e->ts_at = 0;
    if (!(flags & kHasHead)) p = Get(p, &e->ts_at);
  }
  if (flags & kHasDur) p = Get(Get(p, &e->dur_ns), &e->dur_at);
  e->value_kind = flags & (kValueDouble | kValueMillis);
  if (e->value_kind) p = Get(p, &e->value);
  const size_t text_at = static_cast<size_t>(p - entries.data());
  const size_t trailer = (flags & kHasWait) ? 2 * sizeof(int64_t) + sizeof(uint32_t) : 0;
  if (text_at + e->text_size + trailer > entries.size()) return 0;
  *text = entries.substr(text_at, e->text_size);
  if (flags & kHasWait) Get(Get(Get(text->end(), &e->pg), &e->seq), &e->wait_at);
  return text_at + e->text_size + trailer;
}

// ---- SpoolFile ----

SpoolFile::SpoolFile(const std::string& dir, size_t ranks, size_t memory_budget) {
  std::string pattern = (dir.empty() ? std::string(".") : dir) + "/.dsdiag-timeline-spool-XXXXXX";
  fd_ = mkstemp(pattern.data());
  if (fd_ < 0) {
    throw std::runtime_error("cannot make a temporary file in '" + dir +
                             "': " + std::strerror(errno));
  }
  unlink(pattern.c_str());  // gone with the descriptor, whatever happens
  buffer_limit_ = std::clamp(memory_budget / std::max<size_t>(ranks, 1), kMinBuffer, kMaxBuffer);
  for (size_t i = 0; i < ranks; ++i)
    ranks_.push_back(std::unique_ptr<RankSpool>(new RankSpool(this)));
}

SpoolFile::~SpoolFile() {
  if (fd_ >= 0) close(fd_);
}

void SpoolFile::Flush(RankSpool* spool) {
  const EventBuffer& b = spool->buffer_;
  size_t done = 0;
  while (done < b.size()) {
    const ssize_t n =
        pwrite(fd_, b.data() + done, b.size() - done, static_cast<off_t>(size_ + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      throw std::runtime_error(std::string("cannot write the timeline's temporary file: ") +
                               std::strerror(n < 0 ? errno : ENOSPC));
    }
    done += static_cast<size_t>(n);
  }
  spool->chunks_.emplace_back(size_, b.size());
  size_ += b.size();
  spool->buffer_.clear();
}

void SpoolFile::Replay(size_t i, const CollectiveIndex& collectives, int64_t origin_ns,
                       ChromeTraceWriter* out) {
  RankSpool& spool = *ranks_[i];
  for (const auto& [offset, size] : spool.chunks_) {
    read_buffer_.resize(size);
    size_t done = 0;
    while (done < size) {
      const ssize_t n =
          pread(fd_, read_buffer_.data() + done, size - done, static_cast<off_t>(offset + done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) throw std::runtime_error("cannot read the timeline's temporary file back");
      done += static_cast<size_t>(n);
    }
    ReplayEntries(spool, read_buffer_, collectives, origin_ns, out);
  }
  ReplayEntries(spool, spool.buffer_.view(), collectives, origin_ns, out);
  spool.buffer_.Release();
}

void SpoolFile::ReplayEntries(const RankSpool& spool, std::string_view entries,
                              const CollectiveIndex& collectives, int64_t origin_ns,
                              ChromeTraceWriter* out) {
  static constexpr std::string_view kWait = ",\"wait\":";
  static constexpr std::string_view kLast = ",\"last\":";
  static constexpr std::string_view kRanks = ",\"ranks\":";
  static constexpr std::string_view kValue = ChromeTraceWriter::kCounterValue;
  static constexpr std::string_view kValueEnd = ChromeTraceWriter::kCounterEnd;
  static constexpr size_t kSpliced = 2 * kMaxMicrosChars + kWait.size() + kLast.size() +
                                     kRanks.size() + 3 * kMaxIntChars + kValue.size() +
                                     kMaxDoubleChars + kValueEnd.size();
  constexpr uint32_t kNone = RankSpool::kNone;
  RankSpool::Entry e;
  std::string_view text_view;
  for (size_t at = 0; (at = RankSpool::Unpack(entries, at, &e, &text_view)) != 0;) {
    const char* text = text_view.data();
    std::string_view head;
    if (e.head != kNone) {
      const auto [offset, size] = spool.heads_[e.head];
      head = std::string_view(spool.head_text_).substr(offset, size);
    }
    // The event's head and text with its numbers spliced in, through one reservation.
    EventBuffer* buffer = out->BeginEvent();
    char* p = buffer->Room(head.size() + e.text_size + kSpliced);
    p = std::copy(head.begin(), head.end(), p);
    size_t copied = 0;
    const auto copy_to = [&](size_t end) {
      p = std::copy(text + copied, text + end, p);
      copied = end;
    };
    if (e.ts_at != kNone) {
      copy_to(e.ts_at);
      const int64_t start = ChromeTraceWriter::ToGrid(e.ts_ns - origin_ns);
      p = PutMicros(p, start);
      if (e.dur_at != kNone) {
        copy_to(e.dur_at);
        p = PutMicros(p, ChromeTraceWriter::ToGrid(e.ts_ns - origin_ns + e.dur_ns) - start);
      }
    }
    if (e.wait_at != kNone) {
      copy_to(e.wait_at);
      if (const CollectiveIndex::Entry* c = collectives.Find(e.pg, e.seq)) {
        // Origin-free: (last enter - origin) - (start - origin).
        const int64_t wait = std::clamp(c->last_enter - e.ts_ns, int64_t{0}, e.dur_ns);
        p = PutInt(std::copy(kWait.begin(), kWait.end(), p), wait);
        p = PutInt(std::copy(kLast.begin(), kLast.end(), p), c->last_rank);
        p = PutInt(std::copy(kRanks.begin(), kRanks.end(), p), c->ranks);
      }
    }
    copy_to(e.text_size);
    if (e.value_kind != 0) {
      p = std::copy(kValue.begin(), kValue.end(), p);
      if (e.value_kind == RankSpool::kValueMillis) {
        p = PutMillis(p, e.value);
      } else {
        double value = 0;
        std::memcpy(&value, &e.value, sizeof value);
        p = PutDouble(p, value);
      }
      p = std::copy(kValueEnd.begin(), kValueEnd.end(), p);
    }
    buffer->Commit(p);
    out->EndEvent();
  }
}

}  // namespace dsdiag::timeline
