#include "cli/timeline_command.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "analyzers/framework/compare.h"
#include "analyzers/framework/finding.h"
#include "analyzers/framework/input_error.h"
#include "analyzers/framework/run_loader.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "cli/output_file.h"
#include "cli/run_dir_args.h"
#include "timeline/timeline.h"
#include "timeline/torch_fr_timeline.h"

namespace dsdiag::cli {
namespace {

po::options_description VisibleOptions() {
  po::options_description options("options");
  options.add_options()("output,o", po::value<std::string>()->value_name("FILE"),
                        "where to write the timeline (required); - for stdout")(
      "format", po::value<std::string>()->value_name("json|perfetto"),
      "json: Chrome Trace Event JSON; perfetto: Perfetto's protobuf trace (smaller, faster "
      "to write). Default: perfetto for a FILE ending .pftrace or .perfetto-trace, else json")(
      "steps", po::value<std::string>()->value_name("A:B"),
      "only steps A to B, inclusive; either side may be left out (10:, :20, 7)")(
      "ranks", po::value<std::string>()->value_name("LIST"),
      "only these ranks, e.g. 0-3,7 (collective waits still count every rank)");
  return options;
}

// --format's value, or when there is none, the one the output's name implies.
timeline::TimelineFormat FormatOf(const std::string& format, const std::string& output) {
  if (format == "json") return timeline::TimelineFormat::kJson;
  if (format == "perfetto") return timeline::TimelineFormat::kPerfetto;
  if (!format.empty()) throw UsageError("--format must be json or perfetto, not '" + format + "'");
  const std::string extension = std::filesystem::path(output).extension().string();
  return extension == ".pftrace" || extension == ".perfetto-trace"
             ? timeline::TimelineFormat::kPerfetto
             : timeline::TimelineFormat::kJson;
}

}  // namespace

bool ParseTimelineArgs(const std::vector<std::string>& args, TimelineArgs* out) {
  po::options_description options = VisibleOptions();
  po::variables_map vm;
  if (ParseRunDirArgs(args, options, "draw", &vm, &out->run_dir)) return false;
  if (!vm.count("output"))
    throw UsageError("missing -o FILE, where to write the timeline (- for stdout)");
  out->output = vm["output"].as<std::string>();
  if (out->output.empty()) throw UsageError("-o must name a file (or - for stdout)");
  out->format = FormatOf(vm.count("format") ? vm["format"].as<std::string>() : "", out->output);
  std::string error;
  if (vm.count("steps")) {
    auto steps = timeline::ParseStepRange(vm["steps"].as<std::string>(), &error);
    if (!steps) throw UsageError(error);
    out->selection.steps = *steps;
  }
  if (vm.count("ranks")) {
    auto ranks = timeline::RankSet::Parse(vm["ranks"].as<std::string>(), &error);
    if (!ranks) throw UsageError(error);
    out->selection.ranks = *ranks;
  }
  return true;
}

namespace {

// A rank selection that matches no analysed trace draws nothing: say so instead.
void CheckRanksSelected(const analyzers::RunContext& run, const timeline::Selection& s) {
  for (const auto& r : run.ranks)
    if (s.ranks.Contains(r.rank)) return;
  throw InputError("--ranks " + s.ranks.ToString() + " selects none of the ranks in '" + run.dir +
                   "' (ranks with a usable trace: " + analyzers::FormatRankRanges(run.ranks_found) +
                   ")");
}

// "\rtimeline: reading, step 120" while the traces are read, then "\rtimeline: writing,
// rank 12/64", on a terminal only, redrawn at each whole percent (every 10 steps).
std::function<void(const analyzers::DriveProgress&)> TerminalReadProgress() {
  if (!StderrIsTerminal()) return nullptr;
  return [last = int64_t{-1}](const analyzers::DriveProgress& p) mutable {
    if (p.step / 10 == last) return;
    last = p.step / 10;
    std::fprintf(stderr, "\rtimeline: reading every trace, step %lld  ",
                 static_cast<long long>(p.step));
    std::fflush(stderr);
  };
}

std::function<void(int, int)> TerminalWriteProgress() {
  if (!StderrIsTerminal()) return nullptr;
  return [last = -1](int done, int total) mutable {
    const int percent = total > 0 ? static_cast<int>(int64_t{done} * 100 / total) : 100;
    if (percent == last) return;
    last = percent;
    std::fprintf(stderr, "\rtimeline: writing rank %d/%d (%d%%)       ", done, total, percent);
    std::fflush(stderr);
  };
}

// The spool goes beside the output (same file system, so no surprise on a small /tmp).
std::string SpoolDirFor(const OutputFile& output) {
  if (output.is_stdout()) return "";
  const std::string dir = std::filesystem::path(output.path()).parent_path().string();
  return dir.empty() ? "." : dir;
}

}  // namespace

std::string_view TimelineCommand::description() const {
  return "one timeline of all ranks: Chrome Trace JSON or Perfetto protobuf";
}

std::string TimelineCommand::Usage() const {
  std::ostringstream os;
  os << "usage: dsdiag timeline RUN_DIR -o FILE.json|FILE.pftrace [--format json|perfetto]\n"
        "                       [--steps A:B] [--ranks LIST]\n"
        "\n"
        "Writes every rank's trace in RUN_DIR as one Chrome Trace Event JSON file (or, for\n"
        "FILE.pftrace or --format perfetto, one Perfetto protobuf trace), on rank\n"
        "0's clock (each rank's ts mapped through its recorded wall-clock offset): one\n"
        "process per rank, one track per thread plus 'collectives' tracks, spans for steps,\n"
        "phases and collectives (args.wait: ns this rank waited for the last rank to\n"
        "enter), counters for loss, lr, gradient norm, loss scale and samples/s, and an\n"
        "instant event for every finding of 'dsdiag compare' and every error, signal, mark\n"
        "and end record. Open JSON in ui.perfetto.dev, chrome://tracing or speedscope; a\n"
        "Perfetto trace in ui.perfetto.dev or trace_processor (one track per rank with\n"
        "child tracks, absolute times, about half the JSON's size).\n\n"
     << VisibleOptions()
     << "  -h [ --help ]                         show this help\n"
        "\nexit status: 0 written (whatever the findings); 2 bad usage, a run dir that cannot\n"
        "be read, or an output file that cannot be written.\n";
  return os.str();
}

int TimelineCommand::Run(const std::vector<std::string>& args) {
  TimelineArgs parsed;
  if (!ParseTimelineArgs(args, &parsed)) {
    std::cout << Help();
    return 0;
  }
  RaiseOpenFileLimit();
  try {
    // A run of Flight Recorder dumps alone: its own timeline (timeline/torch_fr_timeline.h).
    if (const auto fr = analyzers::LoadFrOnlyRun(parsed.run_dir)) {
      OutputFile output(parsed.output);
      const analyzers::CompareResult compare = analyzers::CompareFrRun(*fr);
      const timeline::TimelineStats stats =
          timeline::WriteTorchFrTimeline(*fr, compare.findings, output.stream(), parsed.format);
      output.Commit();
      if (StderrIsTerminal())
        std::fprintf(stderr,
                     "timeline: wrote %lld events for %d ranks' Flight Recorder dumps to %s\n",
                     static_cast<long long>(stats.events), stats.ranks, output.path().c_str());
      return 0;
    }
    // Load first: a bad run dir is reported before the output file is touched.
    const analyzers::RunContext run = analyzers::LoadRun(parsed.run_dir);
    CheckRanksSelected(run, parsed.selection);
    OutputFile output(parsed.output);
    timeline::TimelineOptions options;
    options.selection = parsed.selection;
    options.format = parsed.format;
    options.spool_dir = SpoolDirFor(output);
    options.drive.progress = TerminalReadProgress();
    options.progress = TerminalWriteProgress();
    const timeline::TimelineStats stats =
        timeline::WriteTimeline(run, options, output.stream()).stats;
    output.Commit();
    if (StderrIsTerminal()) {
      std::fprintf(stderr, "\rtimeline: wrote %lld events for %d ranks (%lld findings) to %s\n",
                   static_cast<long long>(stats.events), stats.ranks,
                   static_cast<long long>(stats.findings), output.path().c_str());
    }
    return 0;
  } catch (const analyzers::RunInputError& e) {
    throw InputError(e.what());
  } catch (const InputError&) {
    throw;
  } catch (const std::runtime_error& e) {  // the spool's temporary file (disk full)
    throw InputError(std::string("cannot write the timeline: ") + e.what());
  }
}

std::unique_ptr<Subcommand> CreateTimelineCommand() { return std::make_unique<TimelineCommand>(); }

}  // namespace dsdiag::cli
