#include "trainer/torch/loader_sweep.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include "probes/session.h"
#include "trace/clock.h"
#include "trainer/torch/batch_stream.h"

namespace dsdiag::trainer {
namespace {

// Resets the kernel's peak-RSS mark (VmHWM) so that each point reports its own peak;
// false where /proc/self/clear_refs is not writable (the peak is then the process's so far).
bool ResetPeakRss() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  out.flush();
  return static_cast<bool>(out);
}

// VmHWM from /proc/self/status, MB; nullopt when it cannot be read. LibTorch's loader
// workers are threads, so the process's peak is the loader's and its workers' peak.
std::optional<double> PeakRssMb() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    long long kb = 0;
    if (std::sscanf(line.c_str(), "VmHWM: %lld kB", &kb) == 1)
      return static_cast<double>(kb) / 1024.0;
  }
  return std::nullopt;
}

std::unique_ptr<probes::Session> OffSession() {
  probes::SessionConfig config;
  config.mode = probes::Mode::kOff;
  std::string error;
  auto session = probes::Session::Start(config, &error);
  if (!session) throw std::runtime_error("cannot start a probes-off session: " + error);
  return session;
}

struct Repeat {
  double samples_per_s = 0;
  double first_batch_ms = 0;
};

Repeat MeasureOnce(const LoaderSweepOptions& o, int workers, int batch_size,
                   probes::Session* session) {
  DataOptions data;
  data.corpus.vocab = o.vocab;
  data.corpus.seq_len = o.seq_len;
  data.corpus.size = o.dataset_size;
  data.corpus.seed = o.seed;
  data.shuffle_seed = o.seed;
  data.batch_size = batch_size;
  data.workers = workers;
  Repeat r;
  const int64_t start = trace::MonotonicNs();
  BatchStream stream(data, session);  // starts the workers
  stream.Next();
  r.first_batch_ms = static_cast<double>(trace::MonotonicNs() - start) / 1e6;
  for (int64_t i = 1; i < o.warmup; ++i) stream.Next();
  const int64_t t0 = trace::MonotonicNs();
  const int64_t budget_ns = static_cast<int64_t>(o.seconds * 1e9);
  int64_t samples = 0, batches = 0;
  while (o.seconds > 0 ? trace::MonotonicNs() - t0 < budget_ns : batches < o.batches) {
    samples += stream.Next().inputs.size(0);
    ++batches;
  }
  const double elapsed = static_cast<double>(trace::MonotonicNs() - t0) / 1e9;
  r.samples_per_s = elapsed > 0 ? static_cast<double>(samples) / elapsed : 0;
  return r;
}

}  // namespace

trace::LoaderSweep RunLoaderSweep(const LoaderSweepOptions& o) {
  if (o.workers.empty() || o.batch_sizes.empty())
    throw std::invalid_argument("nothing to measure: no worker count or batch size");
  if (o.repeats < 1) throw std::invalid_argument("--repeats must be at least 1");
  if (o.seconds <= 0 && o.batches < 1) throw std::invalid_argument("--batches must be at least 1");
  auto session = OffSession();
  trace::LoaderSweep result;
  for (int batch_size : o.batch_sizes) {
    for (int workers : o.workers) {
      const bool reset = ResetPeakRss();
      std::vector<double> rates, firsts;
      for (int k = 0; k < o.repeats; ++k) {
        if (o.progress)
          o.progress("workers " + std::to_string(workers) + ", batch " +
                     std::to_string(batch_size) + ", repeat " + std::to_string(k + 1) + "/" +
                     std::to_string(o.repeats));
        const Repeat r = MeasureOnce(o, workers, batch_size, session.get());
        rates.push_back(r.samples_per_s);
        firsts.push_back(r.first_batch_ms);
      }
      trace::LoaderSweepPoint p;
      p.workers = workers;
      p.batch_size = batch_size;
      p.samples_per_s_median = trace::MedianOf(rates);
      p.samples_per_s_min = *std::min_element(rates.begin(), rates.end());
      p.samples_per_s_max = *std::max_element(rates.begin(), rates.end());
      p.first_batch_ms = trace::MedianOf(firsts);
      if (reset) p.peak_rss_mb = PeakRssMb();
      result.points.push_back(p);
    }
  }
  result.recommendation = trace::RecommendLoaderSetting(result.points);
  return result;
}

}  // namespace dsdiag::trainer
