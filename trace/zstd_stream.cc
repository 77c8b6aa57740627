#include "trace/zstd_stream.h"

#include <zstd.h>

#include <cerrno>

namespace dsdiag::trace {
namespace {

// A block header's size in the zstd format (RFC 8878, 3.1.1.2). Between two blocks the
// decoder asks for exactly this much input next; inside a block or a header, for a
// different amount (what is left of it, plus the next block header).
constexpr size_t kBlockHeaderBytes = 3;

// A 64 KiB window: the decoder of a frame holds about twice its window, and compare keeps
// every rank's file open at once (1,024 ranks x 1 MiB at level 1's default 512 KiB window).
// Trace lines repeat within a step, so the ratio is no worse (measured on synth traces).
constexpr int kWindowLog = 16;
// Match-finder tables no larger than the window: the high levels' defaults (22-23 bits,
// about 50 MB per writer) index far more history than a 64 KiB window keeps. With these,
// level 17 holds about 1.1 MB (ZSTD_estimateCStreamSize) and compresses the same.
constexpr int kTableLog = kWindowLog;

}  // namespace

// ---- ZstdCompressor ----

struct ZstdCompressor::Impl {
  ZSTD_CCtx* cctx = nullptr;
  std::unique_ptr<char[]> out;
  size_t out_capacity = 0;
  size_t pending = 0;  // bytes in `out` not yet given to a sink (the frame header)
  ~Impl() { ZSTD_freeCCtx(cctx); }
};

ZstdCompressor::ZstdCompressor(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ZstdCompressor::~ZstdCompressor() = default;

std::unique_ptr<ZstdCompressor> ZstdCompressor::Create(int level, size_t batch_bytes,
                                                       std::string* error) {
  auto fail = [error](std::string why) {
    if (error) *error = "zstd: " + why;
    return nullptr;
  };
  if (level < kMinLevel || level > kMaxLevel)
    return fail("level must be " + std::to_string(kMinLevel) + ".." + std::to_string(kMaxLevel) +
                ", not " + std::to_string(level));
  auto impl = std::make_unique<Impl>();
  impl->cctx = ZSTD_createCCtx();
  if (impl->cctx == nullptr) return fail("cannot create a compression context");
  for (auto [param, value] :
       {std::pair{ZSTD_c_compressionLevel, level}, std::pair{ZSTD_c_checksumFlag, 1},
        std::pair{ZSTD_c_windowLog, kWindowLog}, std::pair{ZSTD_c_hashLog, kTableLog},
        std::pair{ZSTD_c_chainLog, kTableLog}}) {
    const size_t r = ZSTD_CCtx_setParameter(impl->cctx, param, value);
    if (ZSTD_isError(r)) return fail(ZSTD_getErrorName(r));
  }
  // A flushed batch may hold a little more than its bound (block headers); the frame
  // header and one spare block cover that.
  impl->out_capacity = ZSTD_compressBound(batch_bytes) + ZSTD_CStreamOutSize();
  impl->out.reset(new char[impl->out_capacity]);
  // An empty flush allocates the frame's workspace now rather than in a signal handler,
  // and leaves the frame header to go out with the first batch.
  ZSTD_inBuffer in{nullptr, 0, 0};
  ZSTD_outBuffer out{impl->out.get(), impl->out_capacity, 0};
  const size_t r = ZSTD_compressStream2(impl->cctx, &out, &in, ZSTD_e_flush);
  if (ZSTD_isError(r)) return fail(ZSTD_getErrorName(r));
  impl->pending = out.pos;
  return std::unique_ptr<ZstdCompressor>(new ZstdCompressor(std::move(impl)));
}

int ZstdCompressor::Compress(std::string_view input, Sink sink, void* context) noexcept {
  return Run(input, false, sink, context);
}

int ZstdCompressor::End(Sink sink, void* context) noexcept { return Run({}, true, sink, context); }

int ZstdCompressor::Run(std::string_view input, bool end, Sink sink, void* context) noexcept {
  ZSTD_inBuffer in{input.data(), input.size(), 0};
  const ZSTD_EndDirective mode = end ? ZSTD_e_end : ZSTD_e_flush;
  for (;;) {
    ZSTD_outBuffer out{impl_->out.get(), impl_->out_capacity, impl_->pending};
    const size_t left = ZSTD_compressStream2(impl_->cctx, &out, &in, mode);
    if (ZSTD_isError(left)) {
      error_name_ = ZSTD_getErrorName(left);  // a static string
      return EIO;
    }
    impl_->pending = 0;
    // Only a batch larger than the buffer gets here with output still to come (left > 0):
    // it leaves in several pieces.
    if (out.pos > 0) {
      const int err = sink(context, impl_->out.get(), out.pos);
      if (err != 0) return err;
    }
    if (left == 0) return 0;
  }
}

// ---- ZstdDecompressor ----

struct ZstdDecompressor::Impl {
  ZSTD_DCtx* dctx = nullptr;
  ~Impl() { ZSTD_freeDCtx(dctx); }
};

ZstdDecompressor::ZstdDecompressor(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ZstdDecompressor::~ZstdDecompressor() = default;

std::unique_ptr<ZstdDecompressor> ZstdDecompressor::Create(std::string* error) {
  auto impl = std::make_unique<Impl>();
  impl->dctx = ZSTD_createDCtx();
  if (impl->dctx == nullptr) {
    if (error) *error = "zstd: cannot create a decompression context";
    return nullptr;
  }
  return std::unique_ptr<ZstdDecompressor>(new ZstdDecompressor(std::move(impl)));
}

ZstdDecompressor::Step ZstdDecompressor::Decompress(const char* in, size_t in_size, char* out,
                                                    size_t out_capacity) {
  Step step;
  ZSTD_inBuffer zin{in, in_size, 0};
  ZSTD_outBuffer zout{out, out_capacity, 0};
  const size_t hint = ZSTD_decompressStream(impl_->dctx, &zout, &zin);
  step.consumed = zin.pos;
  step.produced = zout.pos;
  if (ZSTD_isError(hint)) {
    step.error = ZSTD_getErrorName(hint);
    return step;
  }
  // 0: a frame just ended and everything is out. Otherwise a frame is open once any
  // input went in; with none consumed the state is unchanged.
  if (hint == 0) {
    at_frame_end_ = at_block_end_ = true;
  } else if (zin.pos > 0) {
    at_frame_end_ = false;
    at_block_end_ = hint == kBlockHeaderBytes;
  }
  step.at_frame_end = at_frame_end_;
  step.at_block_end = at_block_end_;
  return step;
}

}  // namespace dsdiag::trace
