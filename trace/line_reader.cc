#include "trace/line_reader.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

namespace dsdiag::trace {
namespace {

constexpr size_t kLongLineHeadBytes = 64;
constexpr size_t kMinReadBytes = size_t{1} << 10;

}  // namespace

LineReader::LineReader(std::unique_ptr<ByteSource> source, size_t padding)
    : source_(std::move(source)), padding_(padding) {}

void LineReader::AllocateBuffer() {
  // Zeroed once, padding included, so that nothing ever reads uninitialised bytes.
  buffer_.reset(new char[kChunkBytes + padding_]());
  capacity_ = kChunkBytes;
}

bool LineReader::Rewind(int64_t offset, int64_t lines_before, bool close_file) {
  // After a read error the bytes past it may read differently (or not at all) a second time.
  if (read_error_ != 0 || !source_->Rewind(offset, close_file)) return false;
  // The next visit will likely read about what this one did: each read asks for that and a
  // sixteenth more (at least 1 KiB), so that a visit reads about what it uses in a read or
  // two, and a longer one reads on. Not a page's 4 KiB: at 131,072 ranks a visit is one step
  // (~1.8 KB), and every byte read past it was copied and indexed (simdjson's stage 1) for
  // nothing, 2.3 times the trace in all (measured: -1.7 s of 26 s).
  const int64_t visited = std::max<int64_t>(0, offset - resumed_at_);
  read_size_ =
      std::max(kMinReadBytes, (static_cast<size_t>(visited + visited / 16) + 1023) & ~size_t{1023});
  resumed_at_ = offset;
  rewound_ = true;
  begin_ = end_ = scanned_ = 0;
  eof_ = false;
  lines_ = lines_before;
  bytes_ = offset;
  return true;
}

LineReader::Buffer LineReader::TakeBuffer() {
  Buffer taken;
  taken.bytes = std::move(buffer_);
  taken.capacity = capacity_;
  taken.padding = padding_;
  capacity_ = 0;
  begin_ = end_ = scanned_ = 0;
  return taken;
}

void LineReader::GiveBuffer(Buffer buffer) {
  if (buffer_ || !buffer.bytes || buffer.padding < padding_ || buffer.capacity == 0) return;
  buffer_ = std::move(buffer.bytes);
  capacity_ = buffer.capacity;
}

LineReader::~LineReader() = default;

bool LineReader::Next(Line* line) {
  for (;;) {
    if (scanned_ < end_) {
      const void* nl = std::memchr(buffer_.get() + scanned_, '\n', end_ - scanned_);
      if (nl != nullptr) {
        const size_t at = static_cast<const char*>(nl) - buffer_.get();
        line->text = std::string_view(buffer_.get() + begin_, at - begin_);
        line->length = static_cast<int64_t>(at - begin_);
        line->number = ++lines_;
        line->has_newline = true;
        line->too_long = false;
        begin_ = scanned_ = at + 1;
        return true;
      }
      scanned_ = end_;
    }
    if (end_ - begin_ >= kMaxLineBytes) {
      SkipRestOfLine(line);
      return true;
    }
    if (!Fill()) {
      if (begin_ == end_) return false;
      // The file ends inside a line: its writer stopped before the '\n'.
      line->text = std::string_view(buffer_.get() + begin_, end_ - begin_);
      line->length = static_cast<int64_t>(end_ - begin_);
      line->number = ++lines_;
      line->has_newline = false;
      line->too_long = false;
      begin_ = scanned_ = end_;
      return true;
    }
  }
}

bool LineReader::NextBlock(std::string_view* lines) {
  for (;;) {
    if (scanned_ < end_) {
      // The last '\n' within the block's size; failing that, the first one after it.
      const size_t limit = std::max(scanned_, std::min(end_, begin_ + kBlockBytes));
      const void* nl = memrchr(buffer_.get() + scanned_, '\n', limit - scanned_);
      if (nl == nullptr) nl = std::memchr(buffer_.get() + limit, '\n', end_ - limit);
      if (nl != nullptr) {
        const size_t at = static_cast<const char*>(nl) - buffer_.get();
        *lines = std::string_view(buffer_.get() + begin_, at + 1 - begin_);
        begin_ = scanned_ = at + 1;
        return true;
      }
      scanned_ = end_;
    }
    if (end_ - begin_ >= kMaxLineBytes || !Fill()) return false;
  }
}

bool LineReader::Fill() {
  if (eof_) return false;
  if (!buffer_) AllocateBuffer();
  if (begin_ > 0) {
    // Keep the partial line: move it to the front, then read after it.
    std::memmove(buffer_.get(), buffer_.get() + begin_, end_ - begin_);
    end_ -= begin_;
    scanned_ -= begin_;
    begin_ = 0;
  }
  if (end_ == capacity_ && !Grow()) return false;
  const size_t want = std::min(capacity_ - end_, read_size_);
  if (!rewound_) read_size_ = SIZE_MAX;  // read on in whole chunks
  const ssize_t n = source_->Read(buffer_.get() + end_, want);
  if (n <= 0) {
    if (n < 0) read_error_ = errno;
    eof_ = true;
    return false;
  }
  end_ += static_cast<size_t>(n);
  bytes_ += n;
  return true;
}

bool LineReader::Grow() {
  if (capacity_ >= kMaxLineBytes) return false;
  const size_t capacity = std::min(capacity_ * 2, kMaxLineBytes);
  std::unique_ptr<char[]> bigger(new char[capacity + padding_]());
  std::memcpy(bigger.get(), buffer_.get(), end_);
  buffer_ = std::move(bigger);
  capacity_ = capacity;
  return true;
}

void LineReader::SkipRestOfLine(Line* line) {
  long_head_.assign(buffer_.get() + begin_, std::min(end_ - begin_, kLongLineHeadBytes));
  int64_t length = static_cast<int64_t>(end_ - begin_);
  begin_ = scanned_ = end_ = 0;
  bool newline = false;
  while (Fill()) {
    const void* nl = std::memchr(buffer_.get(), '\n', end_);
    if (nl != nullptr) {
      const size_t at = static_cast<const char*>(nl) - buffer_.get();
      length += static_cast<int64_t>(at);
      begin_ = scanned_ = at + 1;
      newline = true;
      break;
    }
    length += static_cast<int64_t>(end_);
    begin_ = scanned_ = end_ = 0;
  }
  line->text = long_head_;
  line->length = length;
  line->number = ++lines_;
  line->has_newline = newline;
  line->too_long = true;
}

}  // namespace dsdiag::trace
