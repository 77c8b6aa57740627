#include "probes/records/fingerprint_repeats.h"

#include "probes/session.h"
#include "trace/clock.h"
#include "trace/records/fp_record.h"

namespace dsdiag::probes::records {
namespace {

namespace fp_what = trace::records::fp_what;
namespace fp_why = trace::records::fp_why;

}  // namespace

bool PreStepRepeats::LeaveOut(std::string_view what, std::string_view why, int64_t step,
                              bool per_param, const std::vector<uint64_t>& hashes) {
  if (what != fp_what::kGrad && what != fp_what::kParam) return false;
  std::lock_guard<std::mutex> lock(mu_);
  if (why != fp_why::kPreStep) {
    latest_[std::string(what)] = Latest{std::string(why), step, per_param, hashes};
    return false;
  }
  const auto it = latest_.find(what);
  if (it == latest_.end()) return false;
  const Latest& l = it->second;
  // Gradients change every step: only this step's after-sync hashes can be repeated.
  if (what == fp_what::kGrad && (l.why != fp_why::kAfterSync || l.step != step)) return false;
  if (l.per_param != per_param || l.hashes != hashes) return false;
  owed_[std::string(what)] = Owed{l.why, trace::MonotonicNs()};
  return true;
}

std::string PreStepRepeats::TakeOwed() {
  std::lock_guard<std::mutex> lock(mu_);
  std::string kinds;
  for (const auto& [what, owed] : owed_) kinds.append(kinds.empty() ? "" : ",").append(what);
  owed_.clear();
  return kinds;
}

void PreStepRepeats::WriteOwed(probes::Session* session, std::string_view what) noexcept {
  std::map<std::string, Owed, std::less<>> owed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (what.empty()) {
      owed.swap(owed_);
    } else if (const auto it = owed_.find(what); it != owed_.end()) {
      owed.insert(owed_.extract(it));
    }
  }
  for (const auto& [what, o] : owed) {
    trace::records::FpSameRecord r;
    r.what = what;
    r.why = fp_why::kPreStep;
    r.same = o.same;
    auto record = session->writer()->BeginAt(r.kType, o.ts);
    AppendFields(r, &record.line());
  }
}

}  // namespace dsdiag::probes::records
