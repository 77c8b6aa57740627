// dsdiag._core.read_trace: a rank's trace as the analyzers read it — one JSON line per event
// record, trace formats v2's and v3's compact records expanded into the records they stand for
// (trace/compact_records.h) — for scripts and tests that look at records themselves rather
// than grep a file whose light-mode lines are compact.
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "python/core/bindings.h"
#include "trace/trace_reader.h"

namespace py = pybind11;

namespace dsdiag::python {
namespace {

std::vector<std::string> ReadTrace(const std::string& path) {
  std::string error;
  auto reader = trace::TraceReader::Open(path, &error);
  if (!reader) throw std::runtime_error(error);
  std::vector<std::string> lines;
  trace::Record r;
  while (reader->Next(&r)) lines.emplace_back(r.raw_line());
  if (reader->issue_count() > 0) {
    const trace::LocatedIssue& first = reader->issues().front();
    if (!first.truncated_tail || reader->issue_count() > 1)
      throw std::runtime_error(first.ToString());
  }
  return lines;
}

}  // namespace

void BindTraceReader(py::module_& m) {
  m.def("read_trace", &ReadTrace, py::arg("path"),
        "The event records of a rank's trace (header excluded) as JSON lines, compact records "
        "expanded; raises on a malformed line (a cut-short last line is dropped).");
}

}  // namespace dsdiag::python
