// Where compare's time goes: drives one run with no analyzer (the driver and the readers
// alone), with each analyzer alone, and with all of them, and prints the seconds each
// adds over the bare drive. A tool for whoever makes compare faster; bench/run does not
// collect it (its figures are compare_vs_parse).
//
//   dsdiag_bench_analyzer_cost RUN_DIR [REPEATS=2] [ANALYZER...|none]   (default: each in turn;
//                                                                  none: the bare drive only)
//
// Each figure is the CPU time of the fastest of REPEATS drives; the page cache is warmed by the
// first.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "analyzers/framework/registry.h"
#include "analyzers/framework/run_loader.h"
#include "analyzers/framework/step_driver.h"

namespace {

using dsdiag::analyzers::Analyzer;

// The process's CPU time: less disturbed than wall time on a shared VM.
double CpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// CPU seconds of the fastest of `repeats` drives with the analyzers `make` creates.
template <typename Make>
double FastestDrive(const dsdiag::analyzers::RunContext& run, int repeats, Make make) {
  double best = 1e30;
  for (int i = 0; i < repeats; ++i) {
    std::vector<std::unique_ptr<Analyzer>> analyzers = make();
    const double start = CpuSeconds();
    dsdiag::analyzers::DriveRun(run, analyzers);
    best = std::min(best, CpuSeconds() - start);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s RUN_DIR [REPEATS=2] [ANALYZER...]\n", argv[0]);
    return 2;
  }
  const int repeats = argc > 2 ? std::max(1, std::atoi(argv[2])) : 2;
  try {
    const auto run = dsdiag::analyzers::LoadRun(argv[1]);
    const double bare =
        FastestDrive(run, repeats, [] { return std::vector<std::unique_ptr<Analyzer>>{}; });
    std::printf("%-24s %8.3f s\n", "(no analyzer)", bare);
    const size_t count = dsdiag::analyzers::CreateAllAnalyzers().size();
    const std::vector<std::string> only(argv + std::min(argc, 3), argv + argc);
    for (size_t i = 0; i < count; ++i) {
      const std::string_view this_one = dsdiag::analyzers::CreateAllAnalyzers()[i]->name();
      if (!only.empty() && std::find(only.begin(), only.end(), this_one) == only.end()) continue;
      std::string name;
      const double alone = FastestDrive(run, repeats, [&] {
        auto all = dsdiag::analyzers::CreateAllAnalyzers();
        std::vector<std::unique_ptr<Analyzer>> one;
        one.push_back(std::move(all[i]));
        name = std::string(one.back()->name());
        return one;
      });
      std::printf("%-24s %+8.3f s\n", name.c_str(), alone - bare);
    }
    // `none` as the only analyzer named: the bare drive alone (to profile the readers).
    if (only.size() == 1 && only[0] == "none") return 0;
    const double all =
        FastestDrive(run, repeats, [] { return dsdiag::analyzers::CreateAllAnalyzers(); });
    std::printf("%-24s %8.3f s (%+.3f)\n", "(all)", all, all - bare);
    // Measured again: the first figure is the one most disturbed by a busy machine.
    const double bare_again =
        FastestDrive(run, repeats, [] { return std::vector<std::unique_ptr<Analyzer>>{}; });
    std::printf("%-24s %8.3f s\n", "(no analyzer, again)", bare_again);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", argv[1], e.what());
    return 1;
  }
  return 0;
}
