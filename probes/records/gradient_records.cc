#include "probes/records/gradient_records.h"

#include <exception>

#include "probes/probe_timer.h"
#include "probes/session.h"
#include "trace/record_types.h"

namespace dsdiag::probes::records {

void WriteGrad(probes::Session* session, const GradRecord& r) noexcept {
  if (!session->on()) return;
  ProbeTimer timer(session);
  auto record = session->writer()->Begin(trace::rec::kGradient);
  auto& l = record.line();
  l.Field("norm", r.norm).Field("n_missing", r.n_missing);
  if (r.missing != nullptr) {
    l.BeginArray("missing");
    for (int i : *r.missing) l.Add(i);
    l.EndArray();
  }
  if (r.nonfinite != nullptr && !r.nonfinite->empty()) {
    l.BeginArray("nonfinite");
    for (int i : *r.nonfinite) l.Add(i);
    l.EndArray();
  }
}

void WriteFingerprints(probes::Session* session, std::string_view what, std::string_view why,
                       bool per_param, const std::vector<uint64_t>& hashes) noexcept {
  if (!session->on()) return;
  ProbeTimer timer(session);
  try {
    if (session->pre_step_repeats()->LeaveOut(what, why, session->writer()->step(), per_param,
                                              hashes))
      return;                        // the step record says so (records/fingerprint_repeats.h)
  } catch (const std::exception&) {  // out of memory: the hashes are written in full
  }
  auto record = session->writer()->Begin(trace::rec::kFingerprint);
  auto& l = record.line();
  l.Field("what", what).Field("why", why).Field("gran", per_param ? "param" : "bucket");
  l.BeginArray("h");
  for (uint64_t h : hashes) l.AddHex(h);
  l.EndArray();
}

}  // namespace dsdiag::probes::records
