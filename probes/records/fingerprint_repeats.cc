#include "probes/records/fingerprint_repeats.h"

#include "probes/session.h"
#include "trace/clock.h"
#include "trace/record_types.h"

namespace dsdiag::probes::records {
namespace {

constexpr std::string_view kPreStep = "pre-step";
constexpr std::string_view kAfterSync = "after-sync";

}  // namespace

bool PreStepRepeats::LeaveOut(std::string_view what, std::string_view why, int64_t step,
                              bool per_param, const std::vector<uint64_t>& hashes) {
  if (what != "grad" && what != "param") return false;
  std::lock_guard<std::mutex> lock(mu_);
  if (why != kPreStep) {
    latest_[std::string(what)] = Latest{std::string(why), step, per_param, hashes};
    return false;
  }
  const auto it = latest_.find(what);
  if (it == latest_.end()) return false;
  const Latest& l = it->second;
  // Gradients change every step: only this step's after-sync hashes can be repeated.
  if (what == "grad" && (l.why != kAfterSync || l.step != step)) return false;
  if (l.per_param != per_param || l.hashes != hashes) return false;
  owed_[std::string(what)] = Owed{l.why, trace::MonotonicNs()};
  return true;
}

void PreStepRepeats::TakeOwed(trace::JsonLine* step_record) {
  std::lock_guard<std::mutex> lock(mu_);
  if (owed_.empty()) return;
  std::string kinds;
  for (const auto& [what, owed] : owed_) kinds.append(kinds.empty() ? "" : ",").append(what);
  step_record->Field("pre_step_fp", kinds);
  owed_.clear();
}

void PreStepRepeats::WriteOwed(probes::Session* session) noexcept {
  std::map<std::string, Owed, std::less<>> owed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    owed.swap(owed_);
  }
  for (const auto& [what, o] : owed) {
    auto record = session->writer()->BeginAt(trace::rec::kFingerprint, o.ts);
    record.line().Field("what", what).Field("why", kPreStep).Field("same", o.same);
  }
}

}  // namespace dsdiag::probes::records
