#include "probes/rank_probes.h"

#include <cstdlib>
#include <exception>
#include <utility>

#include "trace/clock.h"
#include "trace/records/end_record.h"
#include "trace/run_id.h"

namespace dsdiag::probes {
namespace {

constexpr const char* kRunIdKey = "dsdiag/run_id";

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

// Rank 0's id, shared through the store.
std::string AgreeOnRunId(KeyValueStore* store, int rank, int world_size, int64_t now_ns) {
  if (rank == 0) {
    const std::string id = trace::MakeRunId(now_ns);
    if (store && world_size > 1) store->Set(kRunIdKey, id);
    return id;
  }
  return store->Get(kRunIdKey);
}

// An integer variable into *out; a value that does not parse is noted in *error.
void ReadIntEnv(const char* name, int* out, std::string* error) {
  const std::string text = Env(name);
  if (text.empty()) return;
  char* end = nullptr;
  const long value = std::strtol(text.c_str(), &end, 10);
  if (end == text.c_str() || *end != '\0' || value < 0 || value > (1 << 30)) {
    *error = std::string(name) + "=" + text + ": expected a number >= 0";
    return;
  }
  *out = static_cast<int>(value);
}

}  // namespace

RankProbesConfig RankProbesConfig::FromEnvironment() {
  RankProbesConfig config;
  ReadIntEnv("RANK", &config.rank, &config.environment_error);
  ReadIntEnv("WORLD_SIZE", &config.world_size, &config.environment_error);
  ReadIntEnv("LOCAL_RANK", &config.local_rank, &config.environment_error);
  config.run_dir = Env("DSDIAG_OUT");
  config.run_id = Env("DSDIAG_RUN_ID");
  if (const std::string probes = Env("DSDIAG_PROBES"); !probes.empty()) {
    if (std::optional<Mode> mode = ParseMode(probes)) {
      config.mode = *mode;
    } else {
      config.environment_error = "DSDIAG_PROBES=" + probes + ": expected off, light or full";
    }
  }
  if (const std::string timeout = Env("DSDIAG_TIMEOUT"); !timeout.empty()) {
    char* end = nullptr;
    const double seconds = std::strtod(timeout.c_str(), &end);
    if (end == timeout.c_str() || *end != '\0') {
      config.environment_error = "DSDIAG_TIMEOUT=" + timeout + ": expected a number of seconds";
    } else {
      config.collective_timeout_s = seconds;
    }
  }
  return config;
}

std::unique_ptr<RankProbes> RankProbes::Start(RankProbesConfig config, KeyValueStore* store,
                                              std::string* error) {
  auto fail = [&](std::string why) -> std::unique_ptr<RankProbes> {
    if (error) *error = std::move(why);
    return nullptr;
  };
  if (!config.environment_error.empty()) return fail(config.environment_error);
  if (config.rank < 0 || config.world_size < 1 || config.rank >= config.world_size) {
    return fail("rank " + std::to_string(config.rank) + " of world size " +
                std::to_string(config.world_size) + ": expected 0 <= rank < world size");
  }
  const bool alone = config.world_size == 1;
  if (!store && !alone && config.run_id.empty()) {
    return fail("rank " + std::to_string(config.rank) + " of " + std::to_string(config.world_size) +
                ": the ranks need the job's store (or a run_id, e.g. DSDIAG_RUN_ID) to agree on "
                "a run id");
  }
  if (!config.wall_clock) config.wall_clock = [] { return trace::WallNs(); };

  std::unique_ptr<RankProbes> self(new RankProbes());
  ClockOffset offset;  // unmeasured
  try {
    self->run_id_ = !config.run_id.empty()
                        ? config.run_id
                        : AgreeOnRunId(store, config.rank, config.world_size, config.wall_clock());
    if (alone) {
      offset = {0, 0, 0};
    } else if (store) {
      offset = MeasureClockOffset(*store, config.rank, config.world_size, "start",
                                  {.now = config.wall_clock});
    }
  } catch (const std::exception& e) {
    return fail(std::string("the job's store failed while the ranks agreed on the run id and "
                            "clock: ") +
                e.what());
  }

  self->run_dir_ = config.run_dir.empty() ? "runs/" + self->run_id_ : config.run_dir;
  SessionConfig session_config;
  session_config.mode = config.mode;
  session_config.run_dir = self->run_dir_;
  session_config.compression = config.compression;
  trace::TraceHeader& header = session_config.header;
  header = config.header;
  header.run_id = self->run_id_;
  header.rank = config.rank;
  header.world_size = config.world_size;
  header.local_rank = config.local_rank >= 0 ? config.local_rank : config.rank;
  header.clock.mono_ns = trace::MonotonicNs();
  header.clock.wall_ns = config.wall_clock();
  header.clock.offset_ns = offset.offset_ns;
  header.clock.offset_err_ns = offset.err_ns;

  std::string session_error;
  self->session_ = Session::Start(session_config, &session_error);
  if (!self->session_) return fail("cannot start the trace: " + session_error);
  if (offset.err_ns >= 0) {
    self->session_->RecordClock("start", offset.offset_ns, offset.err_ns, offset.rtt_ns);
  }
  self->recorder_ = std::make_unique<FlightRecorder>(header, self->run_dir_);
  self->collectives_ =
      std::make_unique<CollectiveProbe>(self->session_.get(), self->recorder_.get());
  self->watchdog_ = std::make_unique<Watchdog>(self->session_.get(), self->recorder_.get(),
                                               config.collective_timeout_s);
  self->watchdog_->EndProcessOnTimeout(config.end_on_collective_timeout);
  if (config.stop_signals) {
    self->stop_signals_ = StopSignals::Install(self->session_.get(), self->recorder_.get());
    if (!self->stop_signals_) {
      self->session_->Mark("stop-signals",
                           "not installed: another StopSignals handles this process's signals");
    }
  }
  if (config.record_terminate) {
    self->terminate_recorder_ =
        TerminateRecorder::Install(self->session_.get(), self->recorder_.get());
    if (!self->terminate_recorder_) {
      self->session_->Mark("terminate-recorder",
                           "not installed: another TerminateRecorder handles this process");
    }
  }
  if (config.record_fatal_signals) {
    self->fatal_signals_ = FatalSignals::Install(self->session_.get(), self->recorder_.get());
    if (!self->fatal_signals_) {
      self->session_->Mark("fatal-signals",
                           "not installed: another FatalSignals handles this process's signals");
    }
  }
  self->store_ = store;
  self->config_ = std::move(config);
  return self;
}

std::unique_ptr<RankProbes> RankProbes::Start(RankProbesConfig config,
                                              std::unique_ptr<KeyValueStore> store,
                                              std::string* error) {
  std::unique_ptr<RankProbes> self = Start(std::move(config), store.get(), error);
  if (self) self->owned_store_ = std::move(store);
  return self;
}

RankProbes::~RankProbes() = default;

void RankProbes::MeasureClock(std::string_view when) noexcept {
  if (config_.world_size == 1) {
    session_->RecordClock(when, 0, 0, 0);
    return;
  }
  if (!store_) return;
  try {
    const ClockOffset offset = MeasureClockOffset(*store_, config_.rank, config_.world_size, when,
                                                  {.now = config_.wall_clock});
    session_->RecordClock(when, offset.offset_ns, offset.err_ns, offset.rtt_ns);
  } catch (const std::exception& e) {
    session_->RecordError("clock", std::string("measuring the clock offset (") + std::string(when) +
                                       ") through the store: " + e.what());
  }
}

void RankProbes::Finish(int status) noexcept {
  MeasureClock("end");
  session_->End(trace::records::end_reason::kOk, status);
}

}  // namespace dsdiag::probes
