#include "synth/torch_fr_dumps.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <exception>
#include <filesystem>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "inject/inject_spec.h"
#include "synth/faults.h"
#include "synth/noise.h"
#include "synth/rank_trace.h"
#include "synth/run_dir_writer.h"
#include "synth/schedule.h"
#include "synth/synth_model.h"
#include "synth/time_model.h"
#include "trace/run_files.h"
#include "trace/torch_fr/pickle_writer.h"
#include "trace/torch_fr/torch_fr_files.h"
#include "trace/torch_fr/torch_fr_keys.h"

namespace dsdiag::synth {

struct TorchFrDumps::State {
  int ranks = 0;
  int64_t steps = 0;
  uint64_t seed = 0;
  int entries = 0;
  SynthModel params = SynthModel::DeepSeekMoe();
  Faults faults;
  std::unique_ptr<TimeModel> model;
  Schedule schedule;
};

namespace {

namespace fs = std::filesystem;
using trace::PickleWriter;
using DK = trace::TorchFrDumpKeys;
using GK = trace::TorchFrGroupKeys;
using SK = trace::TorchFrStatusKeys;
using EK = trace::TorchFrEntryKeys;
using FK = trace::TorchFrFrameKeys;

constexpr uint32_t kSlotThreadId = 2000;  // noise slot (rank_trace.cc uses 1000..)
constexpr int64_t kNsPerMs = 1000000;

// The stack that issues a DDP bucket's allreduce: the autograd engine, called from
// loss.backward() in the training script (innermost first, as torch writes frames).
struct FrameText {
  const char* name;
  const char* filename;
  int line;
};
constexpr char kTorchDir[] = "/opt/venv/lib/python3.11/site-packages/torch/";
constexpr std::array<FrameText, 7> kFrames = {{
    {"_engine_run_backward", "autograd/graph.py", 829},
    {"backward", "autograd/__init__.py", 353},
    {"backward", "_tensor.py", 647},
    {"train_step", "/workspace/train.py", 88},
    {"train_epoch", "/workspace/train.py", 131},
    {"main", "/workspace/train.py", 160},
    {"<module>", "/workspace/train.py", 164},
}};

// The keys of one entry, in the order torch inserts them (FlightRecorderDetail.hpp,
// getCollectiveTrace): a key's memo slot is looked up once per dump, not per entry.
enum Key : int {
  kFrames_,
  kRecordId,
  kPgId,
  kProcessGroup,
  kThreadName,
  kThreadId,
  kCollectiveSeqId,
  kP2pSeqId,
  kOpId,
  kProfilingName,
  kTimeCreatedNs,
  kDurationMs,
  kInputSizes,
  kInputDtypes,
  kOutputSizes,
  kOutputDtypes,
  kState,
  kTimeDiscoveredStartedNs,
  kTimeDiscoveredCompletedNs,
  kRetired,
  kTimeoutMs,
  kIsP2p,
  kKeyCount
};
constexpr std::array<std::string_view, kKeyCount> kKeyText = {
    EK::frames.name(),
    EK::record_id.name(),
    EK::pg_id.name(),
    EK::process_group.name(),
    EK::thread_name.name(),
    EK::thread_id.name(),
    EK::collective_seq_id.name(),
    EK::p2p_seq_id.name(),
    EK::op_id.name(),
    EK::profiling_name.name(),
    EK::time_created_ns.name(),
    EK::duration_ms.name(),
    EK::input_sizes.name(),
    EK::input_dtypes.name(),
    EK::output_sizes.name(),
    EK::output_dtypes.name(),
    EK::state.name(),
    EK::time_discovered_started_ns.name(),
    EK::time_discovered_completed_ns.name(),
    EK::retired.name(),
    EK::timeout_ms.name(),
    EK::is_p2p.name()};

// One allreduce as the recorder holds it; times are the rank's wall clock.
struct Entry {
  int64_t seq = 0;  // collective_seq_id and op_id (1-based)
  int64_t numel = 0;
  int64_t created = 0;
  std::optional<int64_t> started;
  std::optional<int64_t> completed;
};

// Writes a string once, then fetches it from the memo: the fixed strings of every entry.
class Strings {
 public:
  explicit Strings(PickleWriter* w) : w_(w) {}
  void Put(int slot, std::string_view s) {
    if (ids_[slot]) {
      w_->Get(*ids_[slot]);
    } else {
      ids_[slot] = w_->Str(s);
    }
  }

 private:
  PickleWriter* w_;
  std::array<std::optional<PickleWriter::MemoId>, 64> ids_{};
};

class DumpWriter {
 public:
  DumpWriter(const TorchFrDumps::State& s, int rank, std::string* out)
      : s_(s), rank_(rank), w_(out), strings_(&w_) {
    thread_id_ = std::to_string(
        139'600'000'000'000 +
        static_cast<int64_t>(Noise(s.seed, rank, -1).Bits(kSlotThreadId) % 1'000'000'000'000) /
            4096 * 4096);
  }

  void Write() {
    const TimeModel& model = *s_.model;
    const int buckets = model.buckets();
    const std::optional<Stop>& stop = s_.faults.stop();
    // The steps this rank finishes, and whether it issued the stopped step's allreduces.
    const int64_t done_steps = stop ? stop->step : s_.steps;
    const bool issued_stuck = stop && !(stop->kind == Stop::Kind::kHang && stop->rank == rank_);
    const int64_t total = done_steps * buckets + (issued_stuck ? buckets : 0);
    const int64_t first = std::max<int64_t>(0, total - s_.entries);

    std::vector<Entry> entries;
    entries.reserve(static_cast<size_t>(total - first));
    int64_t start = model.FirstStepStart(rank_);
    const int64_t steps = done_steps + (issued_stuck ? 1 : 0);
    for (int64_t step = 0; step < steps; ++step) {
      const StepWork w = model.Work(rank_, step, start);
      const bool stuck = step == done_steps;
      int64_t previous_exit = 0;
      for (int k = 0; k < buckets; ++k) {
        const int64_t index = step * buckets + k;
        const int64_t exit = stuck ? 0 : s_.schedule.ExitOn(model, rank_, step, k);
        if (index >= first) {
          Entry e;
          e.seq = index + 1;
          e.numel = Numel(step, k);
          e.created = model.Wall(rank_, w.enter[k]);
          // An allreduce starts when issued and the previous one on the stream is done.
          if (!stuck || k == 0) e.started = model.Wall(rank_, std::max(w.enter[k], previous_exit));
          if (!stuck) e.completed = model.Wall(rank_, exit);
          entries.push_back(e);
        }
        previous_exit = exit;
      }
      if (!stuck)
        start = model.End(w, s_.schedule.ExitOn(model, rank_, step, buckets - 1)).next_start;
    }

    w_.BeginDict();
    w_.Str(DK::version.name());
    w_.Str("2.10");
    w_.Str(DK::pg_config.name());
    PgConfig();
    w_.Str(DK::comm_lib_version.name());
    w_.Str("2.21.5");
    w_.Str(DK::pg_status.name());
    PgStatus(total, done_steps * buckets, issued_stuck ? done_steps * buckets + 1 : total);
    w_.Str(DK::entries.name());
    w_.BeginList();
    for (size_t i = 0; i < entries.size(); ++i)
      WriteEntry(first + static_cast<int64_t>(i), entries[i]);
    w_.EndList();
    w_.EndDict();
    w_.Finish();
  }

 private:
  // collective-mismatch: the rank's first allreduce of that step has half the elements.
  int64_t Numel(int64_t step, int bucket) const {
    const int64_t n = s_.params.buckets()[bucket].numel;
    return bucket == 0 && s_.faults.CollectiveMismatch(rank_, step) ? n / 2 : n;
  }

  void PgConfig() {
    std::string ranks = "[";
    for (int r = 0; r < s_.ranks; ++r) {
      if (r) ranks += ", ";
      ranks += std::to_string(r);
    }
    ranks += "]";
    w_.BeginDict();
    w_.Str("0");
    w_.BeginDict();
    w_.Str(GK::name.name());
    w_.Str("0");
    w_.Str(GK::desc.name());
    w_.Str(trace::torch_fr_desc::kDefaultPg);
    w_.Str(GK::ranks.name());
    w_.Str(ranks);
    w_.EndDict();
    w_.EndDict();
  }

  // Sequence numbers of the last enqueued, completed and started collectives (-1: none).
  void PgStatus(int64_t enqueued, int64_t completed, int64_t started) {
    w_.BeginDict();
    w_.Str("0");
    w_.BeginDict();
    w_.Str(SK::last_enqueued.name());
    w_.Int(enqueued > 0 ? enqueued : -1);
    w_.Str(SK::last_started.name());
    w_.Int(started > 0 ? started : -1);
    w_.Str(SK::last_completed.name());
    w_.Int(completed > 0 ? completed : -1);
    w_.EndDict();
    w_.EndDict();
  }

  // The stack, each frame dict written whole once and fetched from the memo after, as
  // torch shares one dict per distinct frame.
  void Frames() {
    w_.BeginList();
    for (size_t i = 0; i < kFrames.size(); ++i) {
      if (frame_ids_[i]) {
        w_.Get(*frame_ids_[i]);
        continue;
      }
      const FrameText& f = kFrames[i];
      w_.BeginDict();
      w_.Str(FK::name.name());
      w_.Str(f.name);
      w_.Str(FK::filename.name());
      w_.Str(f.filename[0] == '/' ? std::string(f.filename) : kTorchDir + std::string(f.filename));
      w_.Str(FK::line.name());
      w_.Int(f.line);
      w_.EndDict();
      frame_ids_[i] = w_.Memoize();
    }
    w_.EndList();
  }

  void Key(Key k) { strings_.Put(k, kKeyText[k]); }
  void Value(int slot, std::string_view s) { strings_.Put(kKeyCount + slot, s); }

  void Sizes(int64_t numel) {
    w_.BeginList();
    w_.BeginList();
    w_.Int(numel);
    w_.EndList();
    w_.EndList();
  }

  void Dtypes() {
    w_.BeginList();
    Value(0, "Float");
    w_.EndList();
  }

  void OptionalTime(const std::optional<int64_t>& t) {
    if (t) {
      w_.Int(*t);
    } else {
      w_.None();
    }
  }

  void WriteEntry(int64_t record_id, const Entry& e) {
    w_.BeginDict();
    Key(kFrames_);
    Frames();
    Key(kRecordId);
    w_.Int(record_id);
    Key(kPgId);
    w_.Int(0);
    Key(kProcessGroup);
    w_.BeginTuple();
    Value(1, "0");
    Value(2, trace::torch_fr_desc::kDefaultPg);
    w_.EndTuple();
    Key(kThreadName);
    Value(3, "python");
    Key(kThreadId);
    Value(4, thread_id_);
    Key(kCollectiveSeqId);
    w_.Int(e.seq);
    Key(kP2pSeqId);
    w_.Int(0);
    Key(kOpId);
    w_.Int(e.seq);
    Key(kProfilingName);
    Value(5, "nccl:all_reduce");
    Key(kTimeCreatedNs);
    w_.Int(e.created);
    if (e.started && e.completed) {
      // torch keeps a float (CUDA events' elapsed time).
      Key(kDurationMs);
      w_.Float(static_cast<float>(static_cast<double>(*e.completed - *e.started) / kNsPerMs));
    }
    Key(kInputSizes);
    Sizes(e.numel);
    Key(kInputDtypes);
    Dtypes();
    Key(kOutputSizes);
    Sizes(e.numel);
    Key(kOutputDtypes);
    Dtypes();
    Key(kState);
    Value(6 + (e.completed ? 0
               : e.started ? 1
                           : 2),
          e.completed ? trace::torch_fr_state::kCompleted
          : e.started ? trace::torch_fr_state::kStarted
                      : trace::torch_fr_state::kScheduled);
    Key(kTimeDiscoveredStartedNs);
    OptionalTime(e.started);
    Key(kTimeDiscoveredCompletedNs);
    OptionalTime(e.completed);
    Key(kRetired);
    w_.Bool(e.completed.has_value());
    Key(kTimeoutMs);
    w_.Int(kTimeoutNs / kNsPerMs);
    Key(kIsP2p);
    w_.Bool(false);
    w_.EndDict();
  }

  const TorchFrDumps::State& s_;
  int rank_;
  PickleWriter w_;
  Strings strings_;
  std::string thread_id_;
  std::array<std::optional<PickleWriter::MemoId>, kFrames.size()> frame_ids_{};
};

}  // namespace

TorchFrDumps::TorchFrDumps(const SynthConfig& config, int entries)
    : state_(std::make_unique<State>()) {
  if (config.ranks < 1 || config.ranks > SynthRun::kMaxRanks) {
    throw SynthSpecError("--ranks must be 1.." + std::to_string(SynthRun::kMaxRanks) + ", got " +
                         std::to_string(config.ranks));
  }
  if (config.steps < 1)
    throw SynthSpecError("--steps must be at least 1, got " + std::to_string(config.steps));
  if (entries < 1)
    throw SynthSpecError("--fr-entries must be at least 1, got " + std::to_string(entries));
  State& s = *state_;
  s.ranks = config.ranks;
  s.steps = config.steps;
  s.seed = config.seed;
  s.entries = entries;
  try {
    s.faults = Faults::FromPlan(inject::InjectPlan::Parse(config.injects, config.ranks),
                                config.ranks, config.steps);
  } catch (const inject::InjectSpecError& e) {
    throw SynthSpecError(e.what());
  }
  s.model = std::make_unique<TimeModel>(config.seed, config.ranks, s.params, s.faults);
  const std::optional<Stop>& stop = s.faults.stop();
  s.schedule = Schedule::Build(*s.model, stop ? stop->step : config.steps);
}

TorchFrDumps::~TorchFrDumps() = default;

int TorchFrDumps::ranks() const { return state_->ranks; }
int TorchFrDumps::buckets() const { return state_->model->buckets(); }

bool TorchFrDumps::HasDump(int rank) const {
  const std::optional<Stop>& stop = state_->faults.stop();
  return !(stop && stop->kind == Stop::Kind::kCrash && stop->rank == rank);
}

void TorchFrDumps::AppendDump(int rank, std::string* out) const {
  DumpWriter(*state_, rank, out).Write();
}

std::string TorchFrDumps::Dump(int rank) const {
  std::string out;
  AppendDump(rank, &out);
  return out;
}

std::string TorchFrDumpFileName(int rank) { return kTorchFrPrefix + std::to_string(rank); }

WriteResult WriteTorchFrDumps(const TorchFrDumps& dumps, const WriteOptions& options) {
  PrepareRunDir(options.out_dir, options.force);
  return WritePerRank(dumps.ranks(), options, [&](int rank, std::string* buffer) {
    RankFiles wrote;
    if (!dumps.HasDump(rank)) return wrote;  // a dead rank writes none
    buffer->clear();
    dumps.AppendDump(rank, buffer);
    WriteFileBytes(options.out_dir + "/" + TorchFrDumpFileName(rank), *buffer);
    wrote.files = 1;
    wrote.bytes = static_cast<int64_t>(buffer->size());
    return wrote;
  });
}

}  // namespace dsdiag::synth
