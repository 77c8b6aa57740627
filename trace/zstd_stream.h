// Streaming zstd for traces: the writer's compressor and the reader's decompressor.
//
// The compressor ends every batch with a flushed block (ZSTD_e_flush), so whatever the
// writer has written decodes on its own: a writer SIGKILLed between two batches leaves a
// frame without its end, whose blocks are all readable. The decompressor accepts such a
// frame (and concatenated frames) and tells the caller where the data stopped: at the end
// of a frame, between two blocks of an unfinished frame (a killed writer: nothing lost), or
// inside a block (a write that came up short: that block is lost).
//
// Compiled only with libzstd (DSDIAG_HAVE_ZSTD); zstd.h stays out of this header.
#pragma once

#ifdef DSDIAG_HAVE_ZSTD

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace dsdiag::trace {

class ZstdCompressor {
 public:
  static constexpr int kMinLevel = 1;
  static constexpr int kMaxLevel = 19;  // the writer's default: TraceWriter::Options

  // Receives compressed bytes; returns 0 or an errno value to stop. A plain function
  // pointer: the compressor also runs in signal handlers, where std::function could
  // allocate.
  using Sink = int (*)(void* context, const char* data, size_t size);

  // `batch_bytes`: the usual largest input of one Compress call; the output buffer is
  // sized for it once, so that such a batch leaves in one piece. Starts the frame here,
  // so that later calls never allocate. Null and *error on failure.
  static std::unique_ptr<ZstdCompressor> Create(int level, size_t batch_bytes, std::string* error);
  ~ZstdCompressor();
  ZstdCompressor(const ZstdCompressor&) = delete;
  ZstdCompressor& operator=(const ZstdCompressor&) = delete;

  // Compresses `input` and flushes it as complete blocks, handing the output to `sink`:
  // one call unless the input is larger than batch_bytes. The first call also carries
  // the frame header. Returns 0, the sink's error, or EIO when zstd fails (then
  // error_name() says why). No allocation, no lock, no I/O but the sink's: usable from a
  // signal handler as long as no other call is in progress on this object.
  int Compress(std::string_view input, Sink sink, void* context) noexcept;
  // Ends the frame (last block and checksum). Compress must not be called afterwards.
  int End(Sink sink, void* context) noexcept;

  // zstd's static description of the last failure.
  const char* error_name() const noexcept { return error_name_; }

 private:
  struct Impl;
  explicit ZstdCompressor(std::unique_ptr<Impl> impl);
  int Run(std::string_view input, bool end, Sink sink, void* context) noexcept;

  std::unique_ptr<Impl> impl_;
  const char* error_name_ = "";
};

class ZstdDecompressor {
 public:
  struct Step {
    size_t consumed = 0;  // input bytes used
    size_t produced = 0;  // output bytes made
    // True when the input so far ends exactly at the end of a frame (or before any
    // frame began).
    bool at_frame_end = false;
    // True when it ends at a frame's end or between two blocks: stopping here loses
    // nothing that was written whole.
    bool at_block_end = false;
    std::string error;  // corrupt or foreign data; nothing more can be decoded
  };

  static std::unique_ptr<ZstdDecompressor> Create(std::string* error);
  ~ZstdDecompressor();
  ZstdDecompressor(const ZstdDecompressor&) = delete;
  ZstdDecompressor& operator=(const ZstdDecompressor&) = delete;

  // Decodes from `in` into `out`. Makes progress whenever both have room; call again with
  // no new input while the output comes back full, to drain what zstd holds back.
  Step Decompress(const char* in, size_t in_size, char* out, size_t out_capacity);

 private:
  struct Impl;
  explicit ZstdDecompressor(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  bool at_frame_end_ = true;
  bool at_block_end_ = true;
};

}  // namespace dsdiag::trace

#endif  // DSDIAG_HAVE_ZSTD
