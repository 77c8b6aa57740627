#include "cli/loader_sweep_command.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "cli/commands.h"
#include "cli/options.h"
#include "cli/torch_part.h"
#include "trace/loader_sweep_file.h"
#include "trace/loader_sweep_summary.h"
#include "trainer/torch/loader_sweep.h"  // LoaderSweepOptions: a torch-free header

namespace dsdiag::cli {
namespace {

po::options_description VisibleOptions() {
  po::options_description options("options");
  // clang-format off
  options.add_options()
      ("workers", po::value<std::string>()->default_value("0,1,2,4,8")->value_name("LIST"),
       "loader worker counts to measure (0: batches made on the calling thread)")
      ("batch-size", po::value<std::string>()->default_value("8")->value_name("LIST"),
       "batch sizes to measure")
      ("batches", po::value<int64_t>()->default_value(50)->value_name("N"),
       "timed batches per repeat")
      ("seconds", po::value<double>()->value_name("S"),
       "time each repeat for S seconds instead of --batches")
      ("warmup", po::value<int64_t>()->default_value(5)->value_name("N"),
       "batches fetched before timing (the first batch included), not counted")
      ("repeats", po::value<int>()->default_value(3)->value_name("R"),
       "repeats per point; the table shows their median and spread")
      ("dataset-size", po::value<int64_t>()->default_value(1024)->value_name("N"),
       "samples in the synthetic corpus")
      ("format", po::value<std::string>()->default_value("text")->value_name("text|json"),
       "output format")
      ("out", po::value<std::string>()->value_name("FILE|RUN_DIR"),
       "also write the result as JSON (RUN_DIR/loader-sweep.json when a directory)");
  // clang-format on
  return options;
}

// The --out path: a directory gets loader-sweep.json inside it.
std::string OutPath(const std::string& out) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(out, ec) || (!out.empty() && out.back() == '/'))
    return (fs::path(out) / "loader-sweep.json").string();
  return out;
}

}  // namespace

std::vector<int> ParseIntList(const std::string& flag, const std::string& text, int min) {
  std::vector<int> values;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    size_t used = 0;
    int v = 0;
    try {
      v = std::stoi(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (item.empty() || used != item.size() || v < min)
      throw UsageError("--" + flag + " expects a comma-separated list of integers >= " +
                       std::to_string(min) + ", got \"" + text + "\"");
    values.push_back(v);
  }
  if (values.empty()) throw UsageError("--" + flag + " needs at least one value");
  return values;
}

bool ParseLoaderSweepArgs(const std::vector<std::string>& args, LoaderSweepArgs* out) {
  po::options_description options = VisibleOptions();
  po::variables_map vm;
  if (ParseArgs(args, options, po::positional_options_description(), &vm)) return false;
  out->format = vm["format"].as<std::string>();
  if (out->format != "text" && out->format != "json")
    throw UsageError("--format must be text or json, got \"" + out->format + "\"");
  out->workers = ParseIntList("workers", vm["workers"].as<std::string>(), 0);
  out->batch_sizes = ParseIntList("batch-size", vm["batch-size"].as<std::string>(), 1);
  out->batches = vm["batches"].as<int64_t>();
  if (out->batches < 1) throw UsageError("--batches must be at least 1");
  if (vm.count("seconds")) {
    out->seconds = vm["seconds"].as<double>();
    if (!(out->seconds > 0)) throw UsageError("--seconds must be positive");
  }
  out->warmup = vm["warmup"].as<int64_t>();
  if (out->warmup < 1) throw UsageError("--warmup must be at least 1 (the first batch)");
  out->repeats = vm["repeats"].as<int>();
  if (out->repeats < 1) throw UsageError("--repeats must be at least 1");
  out->dataset_size = vm["dataset-size"].as<int64_t>();
  if (out->dataset_size < 1) throw UsageError("--dataset-size must be at least 1");
  if (vm.count("out")) out->out = vm["out"].as<std::string>();
  return true;
}

std::string_view LoaderSweepCommand::description() const {
  return "measure data-loader throughput over worker counts and recommend one";
}

std::string LoaderSweepCommand::Usage() const {
  std::ostringstream os;
  os << "usage: dsdiag loader-sweep [--workers LIST] [--batch-size LIST] [--batches N | --seconds "
        "S]\n"
        "                           [--warmup N] [--repeats R] [--dataset-size N]\n"
        "                           [--format text|json] [--out FILE|RUN_DIR]\n"
        "\n"
        "Times the reference trainer's data pipeline (synthetic corpus, distributed sampler,\n"
        "LibTorch DataLoader; one rank, probes off) for every worker count and batch size,\n"
        "and recommends the fastest median, or the fewest workers within 5% of it.\n"
        "Peak RSS is the process's VmHWM (/proc/self/status), reset before each point\n"
        "through /proc/self/clear_refs; LibTorch's workers are threads, so it covers them.\n\n"
     << VisibleOptions()
     << "  -h [ --help ]                         show this help\n"
        "\nexit status: 0 measured; 2 bad usage, unwritable --out, or built without LibTorch\n";
  return os.str();
}

int LoaderSweepCommand::Run(const std::vector<std::string>& args) {
  LoaderSweepArgs parsed;
  if (!ParseLoaderSweepArgs(args, &parsed)) {
    std::cout << Help();
    return 0;
  }
  const TorchPart* torch = LinkedTorchPart();
  if (torch == nullptr) return ExecTorchPart("loader-sweep", args);  // runs in dsdiag-torch
  trainer::LoaderSweepOptions o;
  o.workers = parsed.workers;
  o.batch_sizes = parsed.batch_sizes;
  o.batches = parsed.batches;
  o.seconds = parsed.seconds;
  o.warmup = parsed.warmup;
  o.repeats = parsed.repeats;
  o.dataset_size = parsed.dataset_size;
  const bool live = StderrIsTerminal();
  if (live)
    o.progress = [](const std::string& what) {
      std::fprintf(stderr, "\r\033[Kloader-sweep: %s", what.c_str());
      std::fflush(stderr);
    };
  const trace::LoaderSweep result = torch->loader_sweep(o);
  if (live) std::fputs("\r\033[K", stderr);
  const std::string json = trace::LoaderSweepJson(result);
  if (!parsed.out.empty()) {
    const std::string path = OutPath(parsed.out);
    std::ofstream out(path, std::ios::trunc);
    out << json;
    out.close();
    if (!out) throw InputError("cannot write " + path);
  }
  std::cout << (parsed.format == "json" ? json : trace::LoaderSweepTable(result));
  return 0;
}

std::unique_ptr<Subcommand> CreateLoaderSweepCommand() {
  return std::make_unique<LoaderSweepCommand>();
}

}  // namespace dsdiag::cli
