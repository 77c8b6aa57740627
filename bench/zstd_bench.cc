// Compressed-trace size: rewrites plain rank traces as `rank-<R>.jsonl.zst` with the
// TraceWriter's compressor (its level, its 1 MiB batch size), one flushed block per step as
// the writer's flush at each step's begin makes, so that the ratio includes that cost.
// Prints `zstd_ratio V` (plain bytes over compressed bytes, all files together); the CPU
// seconds go to stderr.
//
//   dsdiag_bench_zstd OUT_DIR RANK_TRACE.jsonl...
#include <sys/resource.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <string>

#include "trace/trace_writer.h"
#include "trace/zstd_stream.h"

namespace {

using dsdiag::trace::TraceWriter;
using dsdiag::trace::ZstdCompressor;

constexpr size_t kBatchBytes = size_t{1} << 20;  // TraceWriter::Options::buffer_bytes

int ToFile(void* out, const char* data, size_t size) {
  return std::fwrite(data, 1, size, static_cast<std::FILE*>(out)) == size ? 0 : EIO;
}

int64_t FileBytes(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 ? st.st_size : -1;
}

double CpuSeconds() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// Copies `in`'s lines into a compressed writer at `out`; false (and a message) on error.
bool Rewrite(const std::string& in, const std::string& out) {
  std::ifstream file(in, std::ios::binary);
  if (!file) {
    std::fprintf(stderr, "dsdiag_bench_zstd: cannot read %s\n", in.c_str());
    return false;
  }
  std::string error;
  auto compressor = ZstdCompressor::Create(TraceWriter::Options().zstd_level, kBatchBytes, &error);
  std::FILE* sink = std::fopen(out.c_str(), "wb");
  if (!compressor || !sink) {
    std::fprintf(stderr, "dsdiag_bench_zstd: cannot write %s %s\n", out.c_str(), error.c_str());
    if (sink) std::fclose(sink);
    return false;
  }
  std::string batch;
  std::string line;
  int err = 0;
  while (err == 0 && std::getline(file, line)) {
    batch += line;
    batch += '\n';
    const bool step_end = line.rfind("{\"type\":\"step\"", 0) == 0;
    if (step_end || batch.size() >= kBatchBytes) {
      err = compressor->Compress(batch, &ToFile, sink);
      batch.clear();
    }
  }
  if (err == 0) err = compressor->Compress(batch, &ToFile, sink);
  if (err == 0) err = compressor->End(&ToFile, sink);
  return std::fclose(sink) == 0 && err == 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: dsdiag_bench_zstd OUT_DIR RANK_TRACE.jsonl...\n");
    return 2;
  }
  const std::string out_dir = argv[1];
  int64_t plain = 0;
  int64_t packed = 0;
  const double cpu0 = CpuSeconds();
  for (int i = 2; i < argc; ++i) {
    const std::string in = argv[i];
    const std::string out = out_dir + "/" + in.substr(in.find_last_of('/') + 1) + ".zst";
    if (!Rewrite(in, out)) return 1;
    plain += FileBytes(in);
    packed += FileBytes(out);
  }
  const double cpu = CpuSeconds() - cpu0;
  std::fprintf(stderr, "zstd: %lld -> %lld bytes, %.2f s CPU (%.0f MB/s of plain bytes)\n",
               static_cast<long long>(plain), static_cast<long long>(packed), cpu,
               cpu > 0 ? plain / cpu / 1e6 : 0.0);
  if (packed <= 0) return 1;
  std::printf("zstd_ratio %.2f\n", static_cast<double>(plain) / static_cast<double>(packed));
  return 0;
}
