#include "synth/synth_run.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <exception>
#include <filesystem>
#include <mutex>
#include <thread>

#include "inject/inject_spec.h"
#include "synth/noise.h"
#include "synth/run_dir_writer.h"
#include "trace/run_files.h"

namespace dsdiag::synth {
namespace {

namespace fs = std::filesystem;

// "20260101-081500-4f2a": the launch's UTC time and four hex digits of the seed, the
// shape of the trainer's run ids.
std::string MakeRunId(int64_t launch_wall_ns, uint64_t seed) {
  const time_t secs = static_cast<time_t>(launch_wall_ns / 1000000000);
  tm utc{};
  gmtime_r(&secs, &utc);
  char when[32];
  std::strftime(when, sizeof when, "%Y%m%d-%H%M%S", &utc);
  char id[48];
  std::snprintf(id, sizeof id, "%s-%04x", when, static_cast<unsigned>(Mix(~seed) & 0xffff));
  return id;
}

trace::JsonValue MakeConfig(const SynthConfig& c, const Faults& faults) {
  trace::JsonValue j = trace::JsonValue::Object();
  j.Set("steps", c.steps);
  j.Set("batch_size", kBatchSize);
  j.Set("amp", "off");
  j.Set("probes", "light");
  j.Set("seed", c.seed);
  j.Set("model", "synth");
  j.Set("inject", faults.text());
  j.Set("timeout_s", static_cast<double>(kTimeoutNs / 1000000000));
  return j;
}

Faults ParseFaults(const SynthConfig& c) {
  try {
    return Faults::FromPlan(inject::InjectPlan::Parse(c.injects, c.ranks), c.ranks, c.steps);
  } catch (const inject::InjectSpecError& e) {
    throw SynthSpecError(e.what());
  }
}

const SynthConfig& Checked(const SynthConfig& c) {
  if (c.ranks < 1 || c.ranks > SynthRun::kMaxRanks) {
    throw SynthSpecError("--ranks must be 1.." + std::to_string(SynthRun::kMaxRanks) + ", got " +
                         std::to_string(c.ranks));
  }
  if (c.steps < 1)
    throw SynthSpecError("--steps must be at least 1, got " + std::to_string(c.steps));
  return c;
}

// One output file; errors become SynthIoError naming the path.
class OutFile {
 public:
  explicit OutFile(std::string path) : path_(std::move(path)) {
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) Fail("cannot create");
  }
  ~OutFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  OutFile(const OutFile&) = delete;
  OutFile& operator=(const OutFile&) = delete;

  void Write(std::string* buffer) {
    if (!WriteAll(fd_, buffer->data(), buffer->size())) Fail("cannot write");
    bytes_ += static_cast<int64_t>(buffer->size());
    buffer->clear();
  }
  void Close() {
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) Fail("cannot write");
  }
  int64_t bytes() const { return bytes_; }

 private:
  [[noreturn]] void Fail(const char* what) {
    throw SynthIoError(std::string(what) + " " + path_ + ": " + std::strerror(errno));
  }
  std::string path_;
  int fd_ = -1;
  int64_t bytes_ = 0;
};

}  // namespace

SynthRun::SynthRun(const SynthConfig& config)
    : params_(SynthModel::DeepSeekMoe()), faults_(ParseFaults(Checked(config))) {
  model_ = std::make_unique<TimeModel>(config.seed, config.ranks, params_, faults_);
  const std::optional<Stop>& stop = faults_.stop();
  schedule_ = Schedule::Build(*model_, stop ? stop->step : config.steps);

  facts_.ranks = config.ranks;
  facts_.steps = config.steps;
  facts_.run_id = MakeRunId(model_->LaunchWall(), config.seed);
  facts_.config = MakeConfig(config, faults_);
  facts_.params = &params_;
  facts_.faults = &faults_;
  facts_.model = model_.get();
  facts_.schedule = &schedule_;
  facts_.unused_params = params_.IndicesWithPrefix("blocks.1.moe.experts.2.");
  if (stop) {
    // A crash kills the rank 40% into its backward; a hang freezes it as backward starts.
    const StepWork w =
        model_->Work(stop->rank, stop->step, StepStart(facts_, stop->rank, stop->step));
    facts_.stop_time = stop->kind == Stop::Kind::kCrash
                           ? w.forward_end + (w.backward_end - w.forward_end) * 2 / 5
                           : w.forward_end;
  }
}

void SynthRun::RenderRank(int rank, std::string* buffer, const Drain& drain) const {
  RenderRankTrace(facts_, rank, buffer, drain);
}

std::string SynthRun::RankTrace(int rank) const {
  std::string whole;
  std::string buffer;
  RenderRank(rank, &buffer, [&whole](std::string* b) {
    whole += *b;
    b->clear();
  });
  return whole;
}

bool SynthRun::HasFlightDump(int rank) const { return synth::HasFlightDump(facts_, rank); }

std::string SynthRun::FlightDump(int rank) const {
  std::string out;
  AppendFlightDump(facts_, rank, &out);
  return out;
}

WriteResult WriteRun(const SynthRun& run, const WriteOptions& options) {
  PrepareRunDir(options.out_dir, options.force);
  const std::string dir = options.out_dir + "/";
  return WritePerRank(run.ranks(), options, [&](int rank, std::string* buffer) {
    buffer->clear();  // the last rank's flight dump may still be in it
    OutFile file(dir + trace::RankTraceFileName(rank));
    run.RenderRank(rank, buffer, [&file](std::string* b) { file.Write(b); });
    file.Close();
    RankFiles wrote{1, file.bytes()};
    if (run.HasFlightDump(rank)) {
      *buffer = run.FlightDump(rank);
      WriteFileBytes(dir + trace::FlightDumpFileName(rank), *buffer);
      wrote.files += 1;
      wrote.bytes += static_cast<int64_t>(buffer->size());
    }
    return wrote;
  });
}

}  // namespace dsdiag::synth
