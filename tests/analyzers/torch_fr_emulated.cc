#include "tests/analyzers/torch_fr_emulated.h"

#include <algorithm>
#include <map>
#include <utility>

#include "trace/json_value.h"
#include "trace/torch_fr/pickle_writer.h"
#include "trace/torch_fr/torch_fr_keys.h"

namespace dsdiag::testing {
namespace {

using trace::JsonValue;
using trace::PickleWriter;
using DK = trace::TorchFrDumpKeys;
using GK = trace::TorchFrGroupKeys;
using SK = trace::TorchFrStatusKeys;
using EK = trace::TorchFrEntryKeys;
using FK = trace::TorchFrFrameKeys;

constexpr int64_t kBaseNs = 1'700'000'000'000'000'000;

int64_t CreatedNs(size_t index) { return kBaseNs + static_cast<int64_t>(index) * 1'000'000; }
bool Started(const FrOpSpec& op) { return op.state != trace::torch_fr_state::kScheduled; }
bool Completed(const FrOpSpec& op) { return op.state == trace::torch_fr_state::kCompleted; }

std::string RanksText(const std::vector<int64_t>& ranks) {  // torch's ranks_str: "[0, 1]"
  std::string text = "[";
  for (size_t i = 0; i < ranks.size(); ++i) text += (i ? ", " : "") + std::to_string(ranks[i]);
  return text + "]";
}

// pg_config's groups: name "0" for pg_id 0 (the world), then "1", "2", ...
std::vector<std::pair<std::string, std::vector<int64_t>>> Groups(const FrRankSpec& rank) {
  std::vector<std::pair<std::string, std::vector<int64_t>>> out = {{"0", rank.world}};
  for (size_t i = 0; i < rank.other_groups.size(); ++i)
    out.emplace_back(std::to_string(i + 1), rank.other_groups[i]);
  return out;
}

struct Status {
  int64_t enqueued = -1, started = -1, completed = -1;
};
// pg_status from the collectives recorded (NCCL's ProcessGroupStatus), per pg_id.
std::map<int64_t, Status> StatusOf(const FrRankSpec& rank) {
  std::map<int64_t, Status> out;
  for (const FrOpSpec& op : rank.ops) {
    Status& s = out[op.pg_id];
    if (op.is_p2p) continue;
    s.enqueued = std::max(s.enqueued, op.collective_seq);
    if (Started(op)) s.started = std::max(s.started, op.collective_seq);
    if (Completed(op) || (op.retired && op.profiling_name.rfind("gloo:", 0) == 0))
      s.completed = std::max(s.completed, op.collective_seq);
  }
  for (auto& [pg_id, s] : out) {
    s.enqueued += rank.status_offset;
    if (s.completed >= 0) s.completed += rank.status_offset;
  }
  return out;
}

void Sizes(PickleWriter* w, const std::vector<std::vector<int64_t>>& sizes) {
  w->BeginList();
  for (const auto& shape : sizes) {
    w->BeginList();
    for (int64_t d : shape) w->Int(d);
    w->EndList();
  }
  w->EndList();
}

void Dtypes(PickleWriter* w, const FrOpSpec& op) {
  w->BeginList();
  for (size_t i = 0; i < op.sizes.size(); ++i) w->Str(op.dtype);
  w->EndList();
}

// The frames, innermost first: torch's all_reduce, then the job's line. torch memoizes each
// frame dict once and fetches it again (BINGET) in later entries.
class Frames {
 public:
  void Write(PickleWriter* w, const FrOpSpec& op) {
    w->BeginList();
    Frame(w, "all_reduce",
          "/venv/lib/python3.11/site-packages/torch/distributed/"
          "distributed_c10d.py",
          2800);
    Frame(w, "step", "/job/train.py", op.line);
    w->EndList();
  }

 private:
  void Frame(PickleWriter* w, const std::string& name, const std::string& file, int line) {
    const std::string key = file + ":" + std::to_string(line);
    if (const auto it = memo_.find(key); it != memo_.end()) return w->Get(it->second);
    w->BeginDict();
    w->Str(FK::name.name());
    w->Str(name);
    w->Str(FK::filename.name());
    w->Str(file);
    w->Str(FK::line.name());
    w->Int(line);
    w->EndDict();
    memo_[key] = w->Memoize();
  }
  std::map<std::string, PickleWriter::MemoId> memo_;
};

void OptTime(PickleWriter* w, bool reached, int64_t ns) {
  if (reached)
    w->Int(ns);
  else
    w->None();
}

// One entry of the list layout (torch 2.2's TraceUtils.h dump()).
void ListEntry(PickleWriter* w, Frames* frames, const FrOpSpec& op, size_t i) {
  w->BeginDict();
  w->Str(EK::pg_id.name());
  w->Int(op.pg_id);
  w->Str(EK::seq_id.name());
  w->Int(op.collective_seq);
  w->Str(EK::profiling_name.name());
  w->Str(op.profiling_name);
  w->Str(EK::time_created_us.name());
  w->Int(CreatedNs(i) / 1000);
  w->Str(EK::input_sizes.name());
  Sizes(w, op.sizes);
  w->Str(EK::output_sizes.name());
  Sizes(w, op.sizes);
  w->Str(EK::state.name());
  w->Str(op.state);
  w->Str(EK::retired.name());
  w->Bool(op.retired);
  w->Str(EK::frames.name());
  frames->Write(w, op);
  w->EndDict();
}

// One entry of format 1.4 (torch 2.3's TraceUtils.h dump()).
void V14Entry(PickleWriter* w, Frames* frames, const FrOpSpec& op, int64_t record_id, size_t i) {
  w->BeginDict();
  w->Str(EK::record_id.name());
  w->Int(record_id);
  w->Str(EK::pg_id.name());
  w->Int(op.pg_id);
  w->Str(EK::seq_id.name());
  w->Int(op.collective_seq);
  w->Str(EK::op_id.name());
  w->Int(op.op_id);
  w->Str(EK::profiling_name.name());
  w->Str(op.profiling_name);
  w->Str(EK::time_created_ns.name());
  w->Int(CreatedNs(i));
  if (Completed(op)) {
    w->Str(EK::duration_ms.name());
    w->Float(0.25);
  }
  w->Str(EK::input_sizes.name());
  Sizes(w, op.sizes);
  w->Str(EK::output_sizes.name());
  Sizes(w, op.sizes);
  w->Str(EK::state.name());
  w->Str(op.state);
  w->Str(EK::time_discovered_started_ns.name());
  OptTime(w, Started(op), CreatedNs(i) + 1000);
  w->Str(EK::time_discovered_completed_ns.name());
  OptTime(w, Completed(op), CreatedNs(i) + 2000);
  w->Str(EK::retired.name());
  w->Bool(op.retired);
  w->Str(EK::frames.name());
  frames->Write(w, op);
  w->EndDict();
}

// One entry of formats 2.1 to 2.10 (getCollectiveTrace: frames first, then the fields).
void V2Entry(PickleWriter* w, Frames* frames, FrLayout layout, const FrRankSpec& rank,
             const FrOpSpec& op, int64_t record_id, size_t i) {
  w->BeginDict();
  w->Str(EK::frames.name());
  frames->Write(w, op);
  w->Str(EK::record_id.name());
  w->Int(record_id);
  w->Str(EK::pg_id.name());
  w->Int(op.pg_id);
  w->Str(EK::process_group.name());
  w->BeginTuple();
  w->Str(op.pg_name);
  w->Str(op.pg_desc);
  w->EndTuple();
  if (layout >= FrLayout::kV2_9) {
    w->Str(EK::thread_name.name());
    w->Str("pt_main_thread");
    w->Str(EK::thread_id.name());
    w->Str("140000000000000");
  }
  w->Str(EK::collective_seq_id.name());
  w->Int(op.collective_seq);
  w->Str(EK::p2p_seq_id.name());
  w->Int(op.p2p_seq);
  w->Str(EK::op_id.name());
  w->Int(op.op_id);
  w->Str(EK::profiling_name.name());
  w->Str(op.profiling_name);
  w->Str(EK::time_created_ns.name());
  w->Int(CreatedNs(i));
  if (Completed(op)) {
    w->Str(EK::duration_ms.name());
    w->Float(0.25);
  }
  w->Str(EK::input_sizes.name());
  Sizes(w, op.sizes);
  w->Str(EK::input_dtypes.name());
  Dtypes(w, op);
  w->Str(EK::output_sizes.name());
  Sizes(w, op.sizes);
  w->Str(EK::output_dtypes.name());
  Dtypes(w, op);
  w->Str(EK::state.name());
  w->Str(op.state);
  w->Str(EK::time_discovered_started_ns.name());
  OptTime(w, Started(op), CreatedNs(i) + 1000);
  w->Str(EK::time_discovered_completed_ns.name());
  OptTime(w, Completed(op), CreatedNs(i) + 2000);
  w->Str(EK::retired.name());
  w->Bool(op.retired);
  if (layout >= FrLayout::kV2_4) {
    w->Str(EK::timeout_ms.name());
    w->Int(rank.timeout_ms);
  }
  w->Str(EK::is_p2p.name());
  w->Bool(op.is_p2p);
  w->EndDict();
}

// nlohmann's default object is a std::map: its keys come out sorted.
JsonValue Sorted(const JsonValue& v) {
  if (v.is_array()) {
    JsonValue out = JsonValue::Array();
    for (const JsonValue& e : v.elements()) out.Push(Sorted(e));
    return out;
  }
  if (!v.is_object()) return v;
  std::vector<JsonValue::Member> members = v.members();
  std::sort(members.begin(), members.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  JsonValue out = JsonValue::Object();
  for (const auto& [key, value] : members) out.Set(key, Sorted(value));
  return out;
}

JsonValue JsonSizes(const std::vector<std::vector<int64_t>>& sizes) {
  JsonValue all = JsonValue::Array();
  for (const auto& shape : sizes) {
    JsonValue s = JsonValue::Array();
    for (int64_t d : shape) s.Push(d);
    all.Push(std::move(s));
  }
  return all;
}

}  // namespace

const char* FrLayoutVersion(FrLayout layout) {
  switch (layout) {
    case FrLayout::kList:
      return "";
    case FrLayout::kV1_4:
      return "1.4";
    case FrLayout::kV2_1:
      return "2.1";
    case FrLayout::kV2_4:
      return "2.4";
    case FrLayout::kV2_9:
      return "2.9";
    case FrLayout::kV2_10:
      return "2.10";
  }
  return "";
}

bool FrLayoutHasJson(FrLayout layout) { return layout >= FrLayout::kV2_4; }

std::string EmulatedFrPickle(FrLayout layout, const FrRankSpec& rank) {
  std::string out;
  PickleWriter w(&out);
  Frames frames;
  if (layout == FrLayout::kList) {
    w.BeginList();
    for (size_t i = 0; i < rank.ops.size(); ++i) ListEntry(&w, &frames, rank.ops[i], i);
    w.EndList();
    w.Finish();
    return out;
  }
  w.BeginDict();
  if (layout == FrLayout::kV1_4) {
    w.Str(DK::entries.name());
    w.BeginList();
    for (size_t i = 0; i < rank.ops.size(); ++i)
      V14Entry(&w, &frames, rank.ops[i], rank.first_record_id + static_cast<int64_t>(i), i);
    w.EndList();
    w.Str(DK::version.name());
    w.Str("1.4");
    w.Str(DK::pg_config.name());  // {pg_id (int): [ranks (int)]}
    w.BeginDict();
    const auto groups = Groups(rank);
    for (size_t g = 0; g < groups.size(); ++g) {
      w.Int(static_cast<int64_t>(g));
      w.BeginList();
      for (int64_t r : groups[g].second) w.Int(r);
      w.EndList();
    }
    w.EndDict();
    w.EndDict();
    w.Finish();
    return out;
  }
  w.Str(DK::version.name());
  w.Str(FrLayoutVersion(layout));
  w.Str(DK::pg_config.name());
  w.BeginDict();
  for (const auto& [name, ranks] : Groups(rank)) {
    w.Str(name);
    w.BeginDict();
    w.Str(GK::name.name());
    w.Str(name);
    w.Str(GK::desc.name());
    w.Str(name == "0" ? trace::torch_fr_desc::kDefaultPg : trace::torch_fr_desc::kUndefined);
    w.Str(GK::ranks.name());
    w.Str(RanksText(ranks));
    w.EndDict();
  }
  w.EndDict();
  if (layout >= FrLayout::kV2_9) {
    w.Str(layout == FrLayout::kV2_9 ? DK::nccl_version.name() : DK::comm_lib_version.name());
    w.Str("2.21.5");
  }
  if (layout >= FrLayout::kV2_4) {
    w.Str(DK::pg_status.name());
    w.BeginDict();
    for (const auto& [pg_id, s] : StatusOf(rank)) {
      w.Str(std::to_string(pg_id));
      w.BeginDict();
      w.Str(SK::last_enqueued.name());
      w.Int(s.enqueued);
      w.Str(SK::last_started.name());
      w.Int(s.started);
      w.Str(SK::last_completed.name());
      w.Int(s.completed);
      w.EndDict();
    }
    w.EndDict();
  }
  w.Str(DK::entries.name());
  w.BeginList();
  for (size_t i = 0; i < rank.ops.size(); ++i)
    V2Entry(&w, &frames, layout, rank, rank.ops[i], rank.first_record_id + static_cast<int64_t>(i),
            i);
  w.EndList();
  w.EndDict();
  w.Finish();
  return out;
}

std::string EmulatedFrJson(FrLayout layout, const FrRankSpec& rank) {
  JsonValue d = JsonValue::Object();
  d.Set(DK::version.name(), FrLayoutVersion(layout));
  if (layout >= FrLayout::kV2_9)
    d.Set(layout == FrLayout::kV2_9 ? DK::nccl_version.name() : DK::comm_lib_version.name(),
          "2.21.5");
  JsonValue config = JsonValue::Object();
  for (const auto& [name, ranks] : Groups(rank)) {
    JsonValue g = JsonValue::Object();
    g.Set(GK::name.name(), name);
    g.Set(GK::desc.name(),
          name == "0" ? trace::torch_fr_desc::kDefaultPg : trace::torch_fr_desc::kUndefined);
    g.Set(GK::ranks.name(), RanksText(ranks));
    config.Set(name, std::move(g));
  }
  d.Set(DK::pg_config.name(), std::move(config));
  JsonValue status = JsonValue::Object();
  for (const auto& [pg_id, s] : StatusOf(rank)) {
    JsonValue st = JsonValue::Object();
    st.Set(SK::last_enqueued.name(), std::to_string(s.enqueued));
    st.Set(SK::last_started.name(), std::to_string(s.started));
    st.Set(SK::last_completed.name(), std::to_string(s.completed));
    status.Set(std::to_string(pg_id), std::move(st));
  }
  d.Set(DK::pg_status.name(), std::move(status));
  JsonValue entries = JsonValue::Array();
  for (size_t i = 0; i < rank.ops.size(); ++i) {
    const FrOpSpec& op = rank.ops[i];
    JsonValue e = JsonValue::Object();
    e.Set(EK::record_id.name(), rank.first_record_id + static_cast<int64_t>(i));
    e.Set(EK::pg_id.name(), op.pg_id);
    JsonValue pg = JsonValue::Array();
    pg.Push(op.pg_name);
    pg.Push(op.pg_desc);
    e.Set(EK::process_group.name(), std::move(pg));
    if (layout >= FrLayout::kV2_9) {
      e.Set(EK::thread_name.name(), "pt_main_thread");
      e.Set(EK::thread_id.name(), "140000000000000");
    }
    e.Set(EK::collective_seq_id.name(), op.collective_seq);
    e.Set(EK::p2p_seq_id.name(), op.p2p_seq);
    e.Set(EK::op_id.name(), op.op_id);
    e.Set(EK::profiling_name.name(), op.profiling_name);
    e.Set(EK::time_created_ns.name(), CreatedNs(i));
    if (Completed(op)) e.Set(EK::duration_ms.name(), 0.25);
    e.Set(EK::input_sizes.name(), JsonSizes(op.sizes));
    e.Set(EK::output_sizes.name(), JsonSizes(op.sizes));
    JsonValue dtypes = JsonValue::Array();
    for (size_t t = 0; t < op.sizes.size(); ++t) dtypes.Push(op.dtype);
    e.Set(EK::input_dtypes.name(), dtypes);
    e.Set(EK::output_dtypes.name(), dtypes);
    e.Set(EK::state.name(), op.state);
    e.Set(EK::time_discovered_started_ns.name(), Started(op) ? CreatedNs(i) + 1000 : int64_t{0});
    e.Set(EK::time_discovered_completed_ns.name(),
          Completed(op) ? CreatedNs(i) + 2000 : int64_t{0});
    e.Set(EK::retired.name(), op.retired);
    e.Set(EK::timeout_ms.name(), rank.timeout_ms);
    e.Set(EK::is_p2p.name(), op.is_p2p);
    entries.Push(std::move(e));
  }
  if (!entries.elements().empty())
    d.Set(DK::entries.name(), std::move(entries));  // absent when none
  return Sorted(d).ToJson();
}

std::vector<FrOpSpec> AllReduces(int n, bool last_pending) {
  std::vector<FrOpSpec> ops;
  for (int seq = 1; seq <= n; ++seq) {
    FrOpSpec op;
    op.collective_seq = seq;
    op.op_id = seq;
    op.line = 20 + seq;
    if (last_pending && seq == n) {
      op.state = trace::torch_fr_state::kStarted;
      op.retired = false;
    }
    ops.push_back(op);
  }
  return ops;
}

}  // namespace dsdiag::testing
