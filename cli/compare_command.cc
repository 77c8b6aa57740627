#include "cli/compare_command.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <sstream>

#include "analyzers/framework/compare.h"
#include "analyzers/framework/input_error.h"
#include "analyzers/output/findings_output.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "cli/run_dir_args.h"
#include "trace/run_files.h"

namespace dsdiag::cli {
namespace {

po::options_description VisibleOptions() {
  po::options_description options("options");
  options.add_options()(
      "format", po::value<std::string>()->default_value("text")->value_name("text|json"),
      "text: a summary, a table and each finding in full; json: the dsdiag.findings/1 "
      "object of docs/contract.md")(
      "min-severity",
      po::value<std::string>()->default_value("info")->value_name("info|warning|error"),
      "list only findings at least this severe (the exit status still counts all)")(
      "fr-prefix", po::value<std::string>()->value_name("PREFIX"),
      "the file-name prefix of PyTorch Flight Recorder dumps in RUN_DIR (e.g. "
      "nccl_trace_rank_); default: found by their content");
  return options;
}

}  // namespace

bool ParseCompareArgs(const std::vector<std::string>& args, CompareArgs* out) {
  po::options_description options = VisibleOptions();
  po::variables_map vm;
  if (ParseRunDirArgs(args, options, "analyse", &vm, &out->run_dir)) return false;
  const std::string format = vm["format"].as<std::string>();
  if (format == "text") {
    out->format = CompareArgs::Format::kText;
  } else if (format == "json") {
    out->format = CompareArgs::Format::kJson;
  } else {
    throw UsageError("--format must be text or json, not '" + format + "'");
  }
  const std::string severity = vm["min-severity"].as<std::string>();
  const auto parsed = analyzers::ParseSeverity(severity);
  if (!parsed)
    throw UsageError("--min-severity must be info, warning or error, not '" + severity + "'");
  out->min_severity = *parsed;
  if (vm.count("fr-prefix")) {
    out->fr_prefix = vm["fr-prefix"].as<std::string>();
    if (out->fr_prefix->empty() || out->fr_prefix->find('/') != std::string::npos)
      throw UsageError("--fr-prefix must be a file-name prefix (no '/'), not '" + *out->fr_prefix +
                       "'");
  }
  return true;
}

namespace {

bool UseColor() { return StdoutIsTerminal() && std::getenv("NO_COLOR") == nullptr; }

// Total bytes of the rank traces, for the percentage of the progress line.
int64_t TraceBytes(const std::string& dir) {
  std::error_code ec;
  int64_t total = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec))
    if (trace::ParseRankTraceFileName(entry.path().filename().string()))
      total += static_cast<int64_t>(entry.file_size(ec));
  return total;
}

// "\rcompare: step 812, 41% of 1.2 GiB read" on a terminal, redrawn at each whole percent;
// nothing when stderr is piped.
std::function<void(const analyzers::DriveProgress&)> TerminalProgress(const std::string& dir) {
  if (!StderrIsTerminal()) return nullptr;
  const int64_t total = TraceBytes(dir);
  return [total, last = -1](const analyzers::DriveProgress& p) mutable {
    // Compressed traces read more bytes than they hold on disk: an estimate, capped.
    const int percent =
        total > 0 ? static_cast<int>(std::min<int64_t>(100, p.bytes_read * 100 / total)) : 100;
    if (percent == last) return;
    last = percent;
    std::fprintf(stderr, "\rcompare: step %lld, %d%% of %.1f MiB read  ",
                 static_cast<long long>(p.step), percent, total / 1048576.0);
    std::fflush(stderr);
  };
}

}  // namespace

std::string_view CompareCommand::description() const {
  return "diff the ranks of a run and print findings";
}

std::string CompareCommand::Usage() const {
  std::ostringstream os;
  os << "usage: dsdiag compare RUN_DIR [--format text|json] [--min-severity info|warning|error]\n"
        "                              [--fr-prefix PREFIX]\n"
        "\n"
        "Reads every rank's trace (rank-<R>.jsonl) and flight-recorder dump in RUN_DIR,\n"
        "diffs the ranks and prints what differs as findings, most severe first. A RUN_DIR\n"
        "of PyTorch Flight Recorder dumps (nccl_trace_rank_<R>, any prefix) from a job that\n"
        "ran without dsdiag is analysed from the dumps alone.\n"
        "Finding kinds are described in docs/findings.md.\n\n"
     << VisibleOptions()
     << "  -h [ --help ]                         show this help\n"
        "\nexit status: 0 no error finding; 1 an error finding (counted over all findings,\n"
        "also those --min-severity hides); 2 bad usage or a run dir that cannot be read.\n";
  return os.str();
}

int CompareCommand::Run(const std::vector<std::string>& args) {
  CompareArgs parsed;
  if (!ParseCompareArgs(args, &parsed)) {
    std::cout << Help();
    return 0;
  }
  RaiseOpenFileLimit();
  analyzers::CompareResult result;
  try {
    analyzers::DriveOptions drive;
    drive.progress = TerminalProgress(parsed.run_dir);
    analyzers::InputOptions input;
    input.torch_fr_prefix = parsed.fr_prefix;
    result = analyzers::RunCompare(parsed.run_dir, drive, input);
    if (drive.progress) std::fprintf(stderr, "\r\033[K");
  } catch (const analyzers::RunInputError& e) {
    throw InputError(e.what());
  }
  analyzers::OutputOptions output;
  output.min_severity = parsed.min_severity;
  output.color = parsed.format == CompareArgs::Format::kText && UseColor();
  std::cout << (parsed.format == CompareArgs::Format::kJson
                    ? analyzers::FindingsToJson(result, output)
                    : analyzers::FindingsToText(result, output));
  std::cout.flush();
  return result.has_error() ? 1 : 0;
}

std::unique_ptr<Subcommand> CreateCompareCommand() { return std::make_unique<CompareCommand>(); }

}  // namespace dsdiag::cli
