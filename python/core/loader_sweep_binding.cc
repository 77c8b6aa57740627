// dsdiag._core's loader-sweep half: what `python3 -m dsdiag.torch.loader_sweep` measured on
// the job's own dataset becomes RUN_DIR/loader-sweep.json through the one writer of that
// format (trace/loader_sweep_file.h), with the recommendation and the table that
// `dsdiag loader-sweep` gives (trace/loader_sweep_summary.h), so `dsdiag report` draws
// either the same way.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "python/core/bindings.h"
#include "trace/loader_sweep_file.h"
#include "trace/loader_sweep_summary.h"

namespace py = pybind11;

namespace dsdiag::python {
namespace {

template <typename T>
std::optional<T> Optional(const py::dict& d, const char* key) {
  if (!d.contains(key) || d[key].is_none()) return std::nullopt;
  return d[key].cast<T>();
}

trace::LoaderSweepPoint PointFrom(const py::dict& d) {
  trace::LoaderSweepPoint p;
  p.workers = d["workers"].cast<int>();
  p.batch_size = d["batch_size"].cast<int>();
  p.samples_per_s_median = d["samples_per_s_median"].cast<double>();
  p.samples_per_s_min = Optional<double>(d, "samples_per_s_min");
  p.samples_per_s_max = Optional<double>(d, "samples_per_s_max");
  p.first_batch_ms = Optional<double>(d, "first_batch_ms");
  p.peak_rss_mb = Optional<double>(d, "peak_rss_mb");
  p.pin_memory = Optional<bool>(d, "pin_memory");
  p.persistent_workers = Optional<bool>(d, "persistent_workers");
  return p;
}

trace::LoaderSweep SweepFrom(const py::list& points) {
  trace::LoaderSweep sweep;
  for (const auto& item : points) sweep.points.push_back(PointFrom(item.cast<py::dict>()));
  sweep.recommendation = trace::RecommendLoaderSetting(sweep.points);
  return sweep;
}

// Writes `path` (replacing it); returns the table a person reads.
std::string WriteLoaderSweep(const std::string& path, const py::list& points) {
  const trace::LoaderSweep sweep = SweepFrom(points);
  std::ofstream out(path, std::ios::trunc);
  out << trace::LoaderSweepJson(sweep);
  out.close();
  if (!out) throw std::runtime_error("cannot write " + path);
  return trace::LoaderSweepTable(sweep);
}

}  // namespace

void BindLoaderSweep(py::module_& m) {
  m.attr("loader_sweep_file_name") = trace::kLoaderSweepFileName;
  m.def("write_loader_sweep", &WriteLoaderSweep, py::arg("path"), py::arg("points"),
        "Writes loader-sweep.json from [{workers, batch_size, samples_per_s_median, "
        "samples_per_s_min, samples_per_s_max, first_batch_ms, peak_rss_mb, pin_memory, "
        "persistent_workers}] with the recommendation; returns the table.");
  m.def(
      "loader_sweep_table",
      [](const py::list& points) { return trace::LoaderSweepTable(SweepFrom(points)); },
      py::arg("points"), "The table (and recommendation) for the points, nothing written.");
  m.def(
      "loader_sweep_json",
      [](const py::list& points) { return trace::LoaderSweepJson(SweepFrom(points)); },
      py::arg("points"), "The file's text for the points (with the recommendation).");
}

}  // namespace dsdiag::python
