#include "cli/report_command.h"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "analyzers/framework/input_error.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "cli/output_file.h"
#include "cli/run_dir_args.h"
#include "report/report.h"

namespace dsdiag::cli {
namespace {

po::options_description VisibleOptions() {
  po::options_description options("options");
  options.add_options()("output,o", po::value<std::string>()->value_name("FILE"),
                        "where to write the HTML report (required)")(
      "title", po::value<std::string>()->value_name("TEXT"),
      "the page's title (default: dsdiag report: RUN_ID)");
  return options;
}

}  // namespace

bool ParseReportArgs(const std::vector<std::string>& args, ReportArgs* out) {
  po::options_description options = VisibleOptions();
  po::variables_map vm;
  if (ParseRunDirArgs(args, options, "report on", &vm, &out->run_dir)) return false;
  if (!vm.count("output")) throw UsageError("missing -o FILE, where to write the report");
  out->output = vm["output"].as<std::string>();
  if (out->output.empty() || out->output == "-")
    throw UsageError("-o must name a file (the report is a file to open in a browser)");
  if (vm.count("title")) out->title = vm["title"].as<std::string>();
  return true;
}

namespace {

// "\rreport: step 1234" on a terminal, at most ten times a second.
std::function<void(int64_t)> TerminalProgress() {
  if (!StderrIsTerminal()) return nullptr;
  using Clock = std::chrono::steady_clock;
  return [last = Clock::time_point()](int64_t step) mutable {
    const Clock::time_point now = Clock::now();
    if (now - last < std::chrono::milliseconds(100)) return;
    last = now;
    std::fprintf(stderr, "\rreport: reading step %lld  ", static_cast<long long>(step));
    std::fflush(stderr);
  };
}

// The page goes to a temporary file beside the target, renamed into place when complete.
}  // namespace

std::string_view ReportCommand::description() const {
  return "a self-contained HTML report: findings plus charts";
}

std::string ReportCommand::Usage() const {
  std::ostringstream os;
  os << "usage: dsdiag report RUN_DIR -o FILE.html [--title TEXT]\n"
        "\n"
        "Writes one self-contained HTML page (no network, no scripts) about the run in\n"
        "RUN_DIR: the findings of 'dsdiag compare', then charts drawn as inline SVG —\n"
        "rank x step heatmaps of collective wait and arrival delay, mean step time per\n"
        "rank by phase, per-rank loss and loss-scale curves, the loader sweep\n"
        "(RUN_DIR/loader-sweep.json) when there is one, and the settings that differ across\n"
        "ranks. Large runs are binned (at most 128 rank rows x 200 step columns).\n\n"
     << VisibleOptions()
     << "  -h [ --help ]                         show this help\n"
        "\nexit status: 0 written (whatever the findings); 2 bad usage, a run dir that cannot\n"
        "be read, or an output file that cannot be written.\n";
  return os.str();
}

int ReportCommand::Run(const std::vector<std::string>& args) {
  ReportArgs parsed;
  if (!ParseReportArgs(args, &parsed)) {
    std::cout << Help();
    return 0;
  }
  RaiseOpenFileLimit();
  try {
    OutputFile output(parsed.output);
    report::ReportOptions options;
    options.title = parsed.title;
    options.progress = TerminalProgress();
    const report::ReportStats stats = report::WriteReport(parsed.run_dir, options, output.stream());
    output.Commit();
    if (StderrIsTerminal()) {
      std::fprintf(stderr, "\rreport: wrote %s (%.1f MB): %d ranks, %lld steps, %lld findings\n",
                   parsed.output.c_str(), static_cast<double>(stats.bytes) / 1e6, stats.ranks,
                   static_cast<long long>(stats.steps), static_cast<long long>(stats.findings));
    }
    return 0;
  } catch (const analyzers::RunInputError& e) {
    throw InputError(e.what());
  }
}

std::unique_ptr<Subcommand> CreateReportCommand() { return std::make_unique<ReportCommand>(); }

}  // namespace dsdiag::cli
