// dsdiag._core.ddp_hook_api(probes): the capsule DDP's C++ communication hook records
// through (ddp_hook_api.h).
#include "python/core/ddp_hook_api.h"

#include <pybind11/pybind11.h>

#include <string>

#include "probes/collective_op.h"
#include "probes/fingerprint.h"
#include "probes/rank_probes.h"
#include "python/core/bindings.h"

namespace dsdiag::python {

namespace py = pybind11;

namespace {

void* BeginAllreduce(void* probes, int pg, const char* dtype, int64_t count, int64_t bytes,
                     int64_t bucket) {
  auto* p = static_cast<probes::RankProbes*>(probes);
  return new probes::CollectiveOp(
      p->collectives(), pg,
      trace::Collective{"allreduce", dtype, count, bytes, "ddp-bucket-" + std::to_string(bucket)},
      {}, probes::SourceLocation{});  // DDP's reducer issued it, from no line of the job
}

void Started(void* op) { static_cast<probes::CollectiveOp*>(op)->Started(); }

void Completed(void* op, bool failed) { static_cast<probes::CollectiveOp*>(op)->Completed(failed); }

void WriteAndFree(void* op) {
  auto* collective = static_cast<probes::CollectiveOp*>(op);
  collective->Write();
  delete collective;
}

void FreeApi(PyObject* capsule) {
  delete static_cast<DdpHookApi*>(PyCapsule_GetPointer(capsule, kDdpHookApiCapsule));
}

}  // namespace

void BindDdpHookApi(py::module_& m) {
  m.def(
      "ddp_hook_api",
      [](probes::RankProbes& p) {
        auto* api = new DdpHookApi{
            kDdpHookApiVersion, &p,           BeginAllreduce,           Started,
            Completed,          WriteAndFree, probes::FingerprintBytes, probes::SampleFingerprint};
        return py::capsule(api, kDdpHookApiCapsule, &FreeApi);
      },
      py::arg("probes"),
      "The function table DDP's C++ communication hook records through (dsdiag._ddp_hook_*); "
      "valid while `probes` lives (the Python runtime keeps it to the process's end, and "
      "stops the hooks' recording when the probes end).");
}

}  // namespace dsdiag::python
