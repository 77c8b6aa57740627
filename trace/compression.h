// How a rank trace is stored: plain JSON Lines (`rank-<R>.jsonl`) or zstd-compressed
// (`rank-<R>.jsonl.zst`). Shared by the writer's options, run file names and the
// `--trace-compress` flag.
#pragma once

#include <optional>
#include <string_view>

namespace dsdiag::trace {

enum class TraceCompression { kNone, kZstd };

// True when this build can write and read compressed traces (libzstd was found).
constexpr bool ZstdAvailable() {
#ifdef DSDIAG_HAVE_ZSTD
  return true;
#else
  return false;
#endif
}

inline std::string_view TraceCompressionName(TraceCompression c) {
  return c == TraceCompression::kZstd ? "zstd" : "none";
}

// "none" or "zstd"; nullopt for anything else.
inline std::optional<TraceCompression> ParseTraceCompression(std::string_view name) {
  if (name == "none") return TraceCompression::kNone;
  if (name == "zstd") return TraceCompression::kZstd;
  return std::nullopt;
}

}  // namespace dsdiag::trace
