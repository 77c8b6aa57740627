// LineReader: splits a file into '\n'-terminated lines, reading it in chunks.
//
// Lines are handed out as views into one reusable buffer, each followed by at least
// `padding` allocated bytes, so that simdjson can parse a line in place without copying
// it. A line longer than kMaxLineBytes is not held in memory: it is skipped and reported
// (too_long) with its first bytes, so a corrupt file cannot exhaust memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "trace/byte_source.h"

namespace dsdiag::trace {

class LineReader {
 public:
  // Small: a compare in lockstep reads every rank's file a step at a time, so a chunk is
  // consumed over many turns of all the other ranks; 32 KiB chunks stay in cache until
  // parsed better than 128 KiB ones (128 ranks: the reader 8% faster), and 1,024 ranks keep
  // their buffers near 32 MiB. The buffer grows for longer lines.
  static constexpr size_t kChunkBytes = size_t{32} << 10;
  static constexpr size_t kMaxLineBytes = size_t{64} << 20;

  struct Line {
    std::string_view text;    // without the '\n'; the first bytes only when too_long
    int64_t number = 0;       // 1-based
    bool has_newline = true;  // false for a last line cut short
    bool too_long = false;
    int64_t length = 0;  // the full length, also when too_long
  };

  // The chunk buffer, `padding` allocated bytes after its `capacity`: what a suspended
  // reader hands to a ReaderPool (trace/reader_pool.h) for the next one to use.
  struct Buffer {
    std::unique_ptr<char[]> bytes;
    size_t capacity = 0;
    size_t padding = 0;
  };

  // The buffer is allocated at the first read, unless one was given first (GiveBuffer).
  LineReader(std::unique_ptr<ByteSource> source, size_t padding);
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  // The next line, valid until the following call. False at end of file or on a read
  // error (then read_error() is the errno).
  bool Next(Line* line);

  // Every complete line buffered (up to about kBlockBytes, or the one line when it is
  // longer), '\n's included, for a caller that splits them itself: parsing many lines per
  // call costs less than one call per line. Valid until the following Next/NextBlock; each
  // line gets its number from NumberLine(), in order. False when no complete line is left
  // (end of file, an unterminated tail, a line over kMaxLineBytes): Next() then hands out
  // whatever is left, as it would have.
  bool NextBlock(std::string_view* lines);
  int64_t NumberLine() { return ++lines_; }
  // Small: the parser keeps a block's structural index (a few bytes per token) for as long as
  // its records take to hand out, per open file; 16 KiB parsed as fast as 128 KiB, and 8 KiB
  // (about 6 steps of a synth trace) a little faster than 16 KiB on 128 ranks.
  static constexpr size_t kBlockBytes = size_t{8} << 10;

  // The file offset of `p`, a byte of the last line or block handed out.
  int64_t OffsetOf(const char* p) const {
    return bytes_ - static_cast<int64_t>(end_ - static_cast<size_t>(p - buffer_.get()));
  }
  // Forgets everything buffered: the next line read starts at file offset `offset` and is
  // numbered `lines_before` + 1; bytes() becomes `offset` (bytes re-read are not counted
  // twice). `close_file`: the file is closed until then. False, nothing changed, when the
  // source cannot seek (ByteSource::Rewind) or a read error has been met.
  bool Rewind(int64_t offset, int64_t lines_before, bool close_file);
  // Takes the buffer away (the reader holds none until the next read or GiveBuffer); only
  // between Rewind and the next read, when nothing buffered is left to lose.
  Buffer TakeBuffer();
  // Uses `buffer` if this reader holds none and it has the padding; else drops it.
  void GiveBuffer(Buffer buffer);
  bool holds_buffer() const { return buffer_ != nullptr; }

  int read_error() const { return read_error_; }
  const ByteSource& source() const { return *source_; }
  int64_t lines() const { return lines_; }
  int64_t bytes() const { return bytes_; }

 private:
  // Reads more bytes after end_, first moving the unconsumed tail to the front.
  // Returns false at end of file or on error.
  bool Fill();
  bool Grow();
  void AllocateBuffer();
  // Discards the rest of an over-long line up to its '\n' (or end of file).
  void SkipRestOfLine(Line* line);

  const std::unique_ptr<ByteSource> source_;
  const size_t padding_;
  std::unique_ptr<char[]> buffer_;
  size_t capacity_ = 0;  // usable bytes, padding excluded
  size_t begin_ = 0;     // first unconsumed byte
  size_t end_ = 0;       // one past the last byte read
  size_t scanned_ = 0;   // bytes in [begin_, scanned_) hold no '\n'
  bool eof_ = false;
  int read_error_ = 0;
  int64_t lines_ = 0;
  int64_t bytes_ = 0;
  // Rewinds: where reading last resumed, and how much each read asks for (0: what the
  // buffer holds). A suspended reader reads a few steps per visit; reading a whole chunk each
  // time would read most bytes twice. A file's first read asks for kFirstReadBytes: the run
  // loader reads line 1 only, the step driver a record more before it suspends.
  static constexpr size_t kFirstReadBytes = size_t{8} << 10;
  int64_t resumed_at_ = 0;
  size_t read_size_ = kFirstReadBytes;
  bool rewound_ = false;
  std::string long_head_;  // first bytes of a skipped over-long line
};

}  // namespace dsdiag::trace
