// dsdiag._core's vocabularies: the closed sets of values the trace format's fields take (a
// fingerprint's `what` and `why`, an `end` record's `reason`, a phase's name, a checkpoint's
// `op`, a flight dump's `reason`), each a submodule of constants read from the record's header in
// trace/records/. The Python hooks name these values through them, so that a value is spelled once,
// in C++:
//
//   from dsdiag._core import fp_why
//   _core.write_fingerprints(session, fp_what.GRAD, fp_why.PRE_STEP, True, hashes)
#include <pybind11/pybind11.h>

#include <string>
#include <string_view>
#include <utility>

#include "python/core/bindings.h"
#include "trace/flight_dump_keys.h"
#include "trace/records/ckpt_record.h"
#include "trace/records/end_record.h"
#include "trace/records/fp_record.h"
#include "trace/records/phase_record.h"

namespace dsdiag::python {

namespace py = pybind11;

namespace {

using Value = std::pair<const char*, std::string_view>;

template <size_t N>
void Vocabulary(py::module_& m, const char* name, const char* doc, const Value (&values)[N]) {
  py::module_ sub = m.def_submodule(name, doc);
  py::tuple all(N);
  for (size_t i = 0; i < N; ++i) {
    sub.attr(values[i].first) = std::string(values[i].second);
    all[i] = std::string(values[i].second);
  }
  sub.attr("ALL") = all;  // in the order of the header (a step's order, for phases and fp_why)
}

}  // namespace

void BindVocabulary(py::module_& m) {
  namespace records = trace::records;
  namespace what = trace::records::fp_what;
  namespace why = trace::records::fp_why;
  namespace reason = trace::records::end_reason;
  namespace phase = trace::phase;
  Vocabulary(m, "fp_what", "`fp` records' `what`: what was hashed",
             {{"GRAD", what::kGrad}, {"PARAM", what::kParam}, {"BUFFER", what::kBuffer}});
  Vocabulary(m, "fp_why", "`fp` records' `why`: the point of the run the hashes were taken at",
             {{"INIT", why::kInit},
              {"RESUME", why::kResume},
              {"FORWARD", why::kForward},
              {"AFTER_SYNC", why::kAfterSync},
              {"PRE_STEP", why::kPreStep},
              {"PERIODIC", why::kPeriodic},
              {"FINAL", why::kFinal}});
  Vocabulary(m, "end_reason", "`end` records' `reason`: why the rank ended",
             {{"OK", reason::kOk},
              {"SIGNAL", reason::kSignal},
              {"ERROR", reason::kError},
              {"PEER_FAILURE", reason::kPeerFailure}});
  Vocabulary(m, "phase_name", "the phases of a step (`phase` records' `name`)",
             {{"DATA", phase::kData},
              {"FORWARD", phase::kForward},
              {"BACKWARD", phase::kBackward},
              {"SYNC", phase::kSync},
              {"OPTIMIZER", phase::kOptimizer},
              {"CHECKPOINT", phase::kCheckpoint}});
  Vocabulary(m, "flight_dump_reason", "a flight dump's `reason` (besides a signal's name)",
             {{"TIMEOUT", trace::flight_dump_reason::kTimeout},
              {"ERROR", trace::flight_dump_reason::kError},
              {"TERMINATE", trace::flight_dump_reason::kTerminate}});
  Vocabulary(m, "ckpt_op", "`ckpt` records' `op`",
             {{"SAVE", records::kCkptSave}, {"LOAD", records::kCkptLoad}});
}

}  // namespace dsdiag::python
