// Fingerprint speed against a plain memory read of the same bytes. The buffer is far larger
// than the caches, so both loops stream from DRAM; each is run REPS times, alternating,
// and the fastest run of each counts (the least disturbed by other processes).
// Prints `fingerprint_gbps` (GB/s, 1e9 bytes) and `fingerprint_vs_memread` (the ratio).
//
//   dsdiag_bench_fingerprint MIB REPS
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "probes/fingerprint.h"
#include "trace/clock.h"

namespace {

// Sums the buffer as 64-bit words, four independent lanes so the adds do not serialise;
// the result is printed to stderr so the compiler must perform every load.
uint64_t SumWords(const std::vector<uint64_t>& words) {
  uint64_t a = 0, b = 0, c = 0, d = 0;
  const size_t n = words.size() / 4 * 4;
  for (size_t i = 0; i < n; i += 4) {
    a += words[i];
    b += words[i + 1];
    c += words[i + 2];
    d += words[i + 3];
  }
  return a ^ b ^ c ^ d;
}

template <typename F>
double TimeNs(F&& f) {
  const int64_t start = dsdiag::trace::MonotonicNs();
  f();
  return static_cast<double>(dsdiag::trace::MonotonicNs() - start);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s MIB REPS\n", argv[0]);
    return 2;
  }
  const size_t bytes = static_cast<size_t>(std::atoll(argv[1])) << 20;
  const int reps = std::atoi(argv[2]);
  if (bytes == 0 || reps < 1) {
    std::fprintf(stderr, "MIB and REPS must be positive\n");
    return 2;
  }
  // Non-constant contents, written once so every page is resident before timing.
  std::vector<uint64_t> words(bytes / sizeof(uint64_t));
  for (size_t i = 0; i < words.size(); ++i) words[i] = i * 0x9E3779B97F4A7C15ull;

  double best_hash = 1e300, best_read = 1e300;
  uint64_t sink = 0;
  for (int r = 0; r < reps; ++r) {
    best_read = std::min(best_read, TimeNs([&] { sink ^= SumWords(words); }));
    best_hash = std::min(best_hash, TimeNs([&] {
                           sink ^= dsdiag::probes::FingerprintBytes(
                               words.data(), words.size() * sizeof(uint64_t));
                         }));
  }
  std::fprintf(stderr, "fingerprint bench: %zu MiB, %d reps, read %.1f GB/s, sink %llx\n",
               bytes >> 20, reps, static_cast<double>(bytes) / best_read,
               static_cast<unsigned long long>(sink));
  std::printf("fingerprint_gbps %.2f\n", static_cast<double>(bytes) / best_hash);
  std::printf("fingerprint_vs_memread %.3f\n", best_read / best_hash);
  return 0;
}
