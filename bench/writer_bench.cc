// Trace writer cost per record: T threads each append N `coll` records (the fields
// CollectiveProbe writes) to one TraceWriter on a real file, the default options (1 MiB
// buffer, 100 ms flusher). Prints `writer_ns_per_record_<T>t V`, where V is the process's
// CPU time (user + sys, every thread: writers, flusher, the write(2)s, spinning on the
// buffer lock) over the T x N records, the final Flush included. CPU time rather than wall
// time because on a shared machine the wall time mostly measures the other processes; the
// wall-clock figure goes to stderr.
//
//   dsdiag_bench_writer FILE THREADS RECORDS_PER_THREAD
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "trace/clock.h"
#include "trace/record_types.h"
#include "trace/trace_header.h"
#include "trace/trace_writer.h"

namespace {

using dsdiag::trace::TraceWriter;

// The record a gradient-bucket allreduce leaves, with values that vary like real ones.
void WriteColl(TraceWriter* w, int64_t seq) {
  const int64_t enter = dsdiag::trace::MonotonicNs();
  auto r = w->BeginAt(dsdiag::trace::rec::kCollective, enter);
  r.line()
      .Field("pg", 0)
      .Field("seq", seq)
      .Field("op", "allreduce")
      .Field("dtype", "f32")
      .Field("n", int64_t{12288} + (seq & 7))
      .Field("bytes", int64_t{49152} + 4 * (seq & 7))
      .Field("dur", dsdiag::trace::MonotonicNs() - enter + 2100000)
      .Field("tag", "grad-bucket-2");
}

double ProcessCpuNs() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto ns = [](const timeval& t) { return t.tv_sec * 1e9 + t.tv_usec * 1e3; };
  return ns(u.ru_utime) + ns(u.ru_stime);
}

void Worker(TraceWriter* w, int64_t records) {
  w->NameThisThread("bench");
  for (int64_t i = 0; i < records; ++i) {
    if ((i & 63) == 0) w->SetStep(i >> 6);
    WriteColl(w, i);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s FILE THREADS RECORDS_PER_THREAD\n", argv[0]);
    return 2;
  }
  const int threads = std::atoi(argv[2]);
  const int64_t records = std::atoll(argv[3]);
  if (threads < 1 || records < 1) {
    std::fprintf(stderr, "THREADS and RECORDS_PER_THREAD must be positive\n");
    return 2;
  }
  std::string error;
  auto writer = TraceWriter::Open(argv[1], {}, &error);
  if (!writer) {
    std::fprintf(stderr, "cannot open %s: %s\n", argv[1], error.c_str());
    return 1;
  }
  const double cpu_start = ProcessCpuNs();
  const int64_t start = dsdiag::trace::MonotonicNs();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(Worker, writer.get(), records);
  for (auto& t : pool) t.join();
  writer->Flush();
  const double elapsed = static_cast<double>(dsdiag::trace::MonotonicNs() - start);
  const double cpu = ProcessCpuNs() - cpu_start;
  if (writer->failed() || writer->records_dropped() != 0) {
    std::fprintf(stderr, "the writer dropped records (disk full?)\n");
    return 1;
  }
  const double total = static_cast<double>(records) * threads;
  std::fprintf(stderr,
               "writer bench: %d threads x %lld records, wall %.1f ns per record per thread\n",
               threads, static_cast<long long>(records), elapsed * threads / total);
  std::printf("writer_ns_per_record_%dt %.1f\n", threads, cpu / total);
  return 0;
}
