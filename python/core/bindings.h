// The parts of dsdiag._core, one Bind* per file, called by module.cc.
#pragma once

#include <pybind11/pybind11.h>

namespace dsdiag::python {

void BindProbes(pybind11::module_& m);       // probes_binding.cc
void BindRecords(pybind11::module_& m);      // records_binding.cc
void BindLoaderSweep(pybind11::module_& m);  // loader_sweep_binding.cc
void BindTraceReader(pybind11::module_& m);  // trace_reader_binding.cc
void BindDdpHookApi(pybind11::module_& m);   // ddp_hook_api.cc (after BindProbes)
void BindVocabulary(pybind11::module_& m);   // vocabulary_binding.cc

}  // namespace dsdiag::python
