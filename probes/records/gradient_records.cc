#include "probes/records/gradient_records.h"

#include <exception>

#include "probes/probe_timer.h"
#include "probes/records/write_record.h"
#include "probes/session.h"
#include "trace/records/fp_record.h"

namespace dsdiag::probes::records {

void WriteGrad(probes::Session* session, const GradRecord& r) noexcept { WriteRecord(session, r); }

void WriteFingerprints(probes::Session* session, std::string_view what, std::string_view why,
                       bool per_param, const std::vector<uint64_t>& hashes,
                       std::string_view fn) noexcept {
  if (!session->on()) return;
  ProbeTimer timer(session);
  try {
    if (session->pre_step_repeats()->LeaveOut(what, why, session->writer()->step(), per_param,
                                              hashes))
      return;  // the step record says so (records/fingerprint_repeats.h)
    if (why != trace::records::fp_why::kPreStep)
      session->pre_step_repeats()->WriteOwed(session, what);
  } catch (const std::exception&) {  // out of memory: the hashes are written in full
  }
  trace::records::FpRecord r;
  r.what = what;
  r.why = why;
  r.per_param = per_param;
  r.fn = fn;
  r.hashes = &hashes;
  auto record = session->writer()->Begin(r.kType);
  AppendFields(r, &record.line());
}

}  // namespace dsdiag::probes::records
