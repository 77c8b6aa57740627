// dsdiag._core: the extension module of the dsdiag Python package (python/dsdiag/).
#include <pybind11/pybind11.h>

#include "python/core/bindings.h"

PYBIND11_MODULE(_core, m) {
  m.doc() = "dsdiag's probes core: trace writer, flight recorder, watchdog, fingerprints";
  m.attr("version") = DSDIAG_VERSION;
  dsdiag::python::BindProbes(m);
  dsdiag::python::BindRecords(m);
  dsdiag::python::BindLoaderSweep(m);
  dsdiag::python::BindTraceReader(m);
  dsdiag::python::BindDdpHookApi(m);
  dsdiag::python::BindVocabulary(m);
}
