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

}  // namespace

// ---- RankSpool::Event ----

RankSpool::Event::Event(RankSpool* spool, char phase, std::string_view name, int pid, int64_t tid)
    : spool_(spool), line_(spool->Open()) {
  line_.Field("ph", std::string_view(&phase, 1))
      .Field("name", name)
      .Field("pid", pid)
      .Field("tid", tid);
}

RankSpool::Event::Event(Event&& other) noexcept : spool_(other.spool_), line_(other.line_) {
  other.spool_ = nullptr;
}

RankSpool::Event::~Event() {
  if (!spool_) return;
  line_.Finish();
  spool_->Committed();
}

void RankSpool::Event::WaitOf(int64_t pg, int64_t seq) {
  spool_->entry_.pg = pg;
  spool_->entry_.seq = seq;
  spool_->entry_.wait_at = spool_->Here();
}

// ---- RankSpool ----

std::string* RankSpool::Open() {
  entry_at_ = buffer_.size();
  buffer_.append(sizeof(Entry), '\0');
  return &buffer_;
}

uint32_t RankSpool::Here() const {
  return static_cast<uint32_t>(buffer_.size() - entry_at_ - sizeof(Entry));
}

RankSpool::Event RankSpool::Complete(std::string_view name, std::string_view category, int pid,
                                     int64_t tid, int64_t ts_ns, int64_t dur_ns) {
  Event e(this, 'X', name, pid, tid);
  e.line_.Field("cat", category).Raw("ts", "");
  entry_.ts_at = Here();
  e.line_.Raw("dur", "");
  entry_.dur_at = Here();
  entry_.ts_ns = ts_ns;
  entry_.dur_ns = dur_ns;
  return e;
}

RankSpool::Event RankSpool::Instant(std::string_view name, std::string_view category, char scope,
                                    int pid, int64_t tid, int64_t ts_ns) {
  Event e(this, 'i', name, pid, tid);
  e.line_.Field("cat", category).Field("s", std::string_view(&scope, 1)).Raw("ts", "");
  entry_.ts_at = Here();
  entry_.ts_ns = ts_ns;
  return e;
}

void RankSpool::Counter(std::string_view name, int pid, int64_t ts_ns, double value) {
  Event e(this, 'C', name, pid, 0);
  e.line_.Raw("ts", "");
  entry_.ts_at = Here();
  entry_.ts_ns = ts_ns;
  e.Args().Field("value", value);
  e.EndArgs();
}

RankSpool::Event RankSpool::Metadata(std::string_view name, int pid, int64_t tid) {
  // As ChromeTraceWriter::Metadata: a ts of 0, which no origin changes.
  Event e(this, 'M', name, pid, tid);
  e.line_.Field("ts", 0);
  return e;
}

void RankSpool::Committed() {
  entry_.text_size = Here();
  std::memcpy(buffer_.data() + entry_at_, &entry_, sizeof entry_);
  entry_ = Entry{};
  ++events_;
  if (buffer_.size() >= file_->buffer_limit_) file_->Flush(this);
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
  const std::string& b = spool->buffer_;
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
    ReplayEntries(read_buffer_, collectives, origin_ns, out);
  }
  ReplayEntries(spool.buffer_, collectives, origin_ns, out);
  std::string().swap(spool.buffer_);
}

void SpoolFile::ReplayEntries(std::string_view entries, const CollectiveIndex& collectives,
                              int64_t origin_ns, ChromeTraceWriter* out) {
  size_t at = 0;
  while (at + sizeof(RankSpool::Entry) <= entries.size()) {
    RankSpool::Entry e;
    std::memcpy(&e, entries.data() + at, sizeof e);
    const std::string_view text = entries.substr(at + sizeof e, e.text_size);
    at += sizeof e + e.text_size;
    if (e.ts_at == 0) {  // nothing to splice in
      out->AppendEvent(text);
      continue;
    }
    std::string& event = *out->BeginEvent();
    event.append(text.substr(0, e.ts_at));
    const int64_t start = ChromeTraceWriter::ToGrid(e.ts_ns - origin_ns);
    ChromeTraceWriter::AppendMicros(&event, start);
    size_t rest = e.ts_at;
    if (e.dur_at != 0) {
      event.append(text.substr(rest, e.dur_at - rest));
      ChromeTraceWriter::AppendMicros(
          &event, ChromeTraceWriter::ToGrid(e.ts_ns - origin_ns + e.dur_ns) - start);
      rest = e.dur_at;
    }
    if (e.wait_at != 0) {
      event.append(text.substr(rest, e.wait_at - rest));
      rest = e.wait_at;
      if (const CollectiveIndex::Entry* c = collectives.Find(e.pg, e.seq)) {
        // Origin-free: (last enter - origin) - (start - origin).
        const int64_t wait = std::clamp(c->last_enter - e.ts_ns, int64_t{0}, e.dur_ns);
        trace::JsonLine::AppendMember(&event, "wait", wait);
        trace::JsonLine::AppendMember(&event, "last", int64_t{c->last_rank});
        trace::JsonLine::AppendMember(&event, "ranks", int64_t{c->ranks});
      }
    }
    event.append(text.substr(rest));
    out->EndEvent();
  }
}

}  // namespace dsdiag::timeline
