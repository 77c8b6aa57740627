// dsdiag._core's record writers and fingerprints: what the Python hooks saw, written by the
// same torch-free writers the C++ probes use (probes/records/). Fingerprints read a tensor's
// memory in place (its data_ptr and byte size), without the GIL and without a copy.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "probes/fingerprint.h"
#include "probes/records/checkpoint_record.h"
#include "probes/records/clip_record.h"
#include "probes/records/gradient_records.h"
#include "probes/records/loader_record.h"
#include "probes/records/params_record.h"
#include "probes/records/process_groups.h"
#include "probes/records/rng_record.h"
#include "probes/records/sampler_record.h"
#include "probes/records/scaler_record.h"
#include "probes/session.h"
#include "python/core/bindings.h"

namespace dsdiag::python {

namespace py = pybind11;
using probes::Session;

namespace {

const void* Address(uintptr_t address) { return reinterpret_cast<const void*>(address); }

// Hashes of several memory ranges, one per entry of `ranges` [(address, nbytes), ...],
// each range list hashed as one stream (a bucket's tensors in order).
std::vector<uint64_t> HashRanges(
    const std::vector<std::vector<std::pair<uintptr_t, size_t>>>& groups) {
  std::vector<uint64_t> out;
  out.reserve(groups.size());
  probes::Fingerprinter f;
  for (const auto& group : groups) {
    f.Reset();
    for (const auto& [address, size] : group) {
      if (address != 0 && size != 0) f.Add(Address(address), size);
    }
    out.push_back(f.Digest());
  }
  return out;
}

// One fingerprint of a batch: its tensors' sample fingerprints (probes::SampleFingerprint:
// ~0.1 us each, whatever the batch's size), hashed in order. 0 when there is none.
uint64_t BatchFingerprint(const std::vector<std::pair<uintptr_t, size_t>>& tensors) {
  std::vector<uint64_t> parts;
  for (const auto& [address, size] : tensors)
    if (address != 0 && size != 0)
      parts.push_back(probes::SampleFingerprint(Address(address), size));
  if (parts.empty()) return 0;
  const uint64_t h = probes::FingerprintBytes(parts.data(), parts.size() * sizeof(uint64_t));
  return h != 0 ? h : 1;  // 0 means "none taken"
}

}  // namespace

void BindRecords(py::module_& m) {
  m.def(
      "fingerprint",
      [](uintptr_t address, size_t size) {
        return probes::FingerprintBytes(Address(address), size);
      },
      py::arg("address"), py::arg("nbytes"), py::call_guard<py::gil_scoped_release>(),
      "xxHash3 of nbytes at address (a contiguous CPU tensor's data_ptr()).");
  m.def(
      "fingerprint_samples",
      [](const std::vector<std::pair<uintptr_t, size_t>>& ranges) {
        std::vector<uint64_t> out;
        out.reserve(ranges.size());
        for (const auto& [address, size] : ranges)
          out.push_back(address != 0 ? probes::SampleFingerprint(Address(address), size) : 0);
        return out;
      },
      py::arg("ranges"), py::call_guard<py::gil_scoped_release>(),
      "One sample fingerprint (probes::SampleFingerprint) per (address, nbytes) range; 0 for "
      "a null address.");
  m.def("fingerprint_batch", &BatchFingerprint, py::arg("tensors"),
        py::call_guard<py::gil_scoped_release>(),
        "The `loader` record's `batch`: one fingerprint of a batch's (address, nbytes) tensors, "
        "from a sample of each (probes::SampleFingerprint); 0 for none.");
  m.def("fingerprint_groups", &HashRanges, py::arg("groups"),
        py::call_guard<py::gil_scoped_release>(),
        "One hash per group of (address, nbytes) ranges, each group hashed as one stream.");

  m.def(
      "write_params",
      [](Session* s, std::vector<std::string> names, std::vector<std::vector<int64_t>> shapes,
         std::vector<std::string> dtypes, std::vector<std::vector<int>> buckets,
         std::vector<std::string> buffers, std::vector<int> replicas) {
        probes::records::ParamsRecord r;
        r.names = std::move(names);
        r.shapes = std::move(shapes);
        r.dtypes = std::move(dtypes);
        r.buckets = std::move(buckets);
        r.buffers = std::move(buffers);
        r.replicas = std::move(replicas);
        std::sort(r.replicas.begin(), r.replicas.end());
        probes::records::WriteParams(s, r);
      },
      py::arg("session"), py::arg("names"), py::arg("shapes"), py::arg("dtypes"),
      py::arg("buckets"), py::arg("buffers") = std::vector<std::string>{},
      py::arg("replicas") = std::vector<int>{});
  m.def("group_number", &trace::records::GroupNumber, py::arg("name"), py::arg("is_default"),
        "The pg number records give the group torch calls `name` (0 for the default group).");
  m.def(
      "write_group",
      [](Session* s, const std::string& name, const std::string& desc, const std::string& backend,
         std::vector<int> ranks, int group_rank, bool is_default) {
        probes::records::ProcessGroupInfo g{name,       desc,      backend, std::move(ranks),
                                            group_rank, is_default};
        return probes::records::WriteGroup(s, g);
      },
      py::arg("session"), py::arg("name"), py::arg("desc"), py::arg("backend"), py::arg("ranks"),
      py::arg("group_rank"), py::arg("is_default"));
  m.def(
      "write_mesh",
      [](Session* s, std::vector<int64_t> shape, std::vector<std::string> dims,
         std::vector<int64_t> coord, std::vector<int64_t> pgs) {
        probes::records::MeshLayout mesh{std::move(shape), std::move(dims), std::move(coord),
                                         std::move(pgs)};
        probes::records::WriteMesh(s, mesh);
      },
      py::arg("session"), py::arg("shape"), py::arg("dims"), py::arg("coord"), py::arg("pgs"));
  m.def(
      "write_grad",
      [](Session* s, double norm, int64_t n_missing, std::optional<std::vector<int>> missing,
         std::optional<std::vector<int>> nonfinite) {
        probes::records::GradRecord r;
        r.norm = norm;
        r.n_missing = n_missing;
        if (missing) r.missing = &*missing;
        if (nonfinite && !nonfinite->empty()) r.nonfinite = &*nonfinite;
        probes::records::WriteGrad(s, r);
      },
      py::arg("session"), py::arg("norm"), py::arg("n_missing"), py::arg("missing") = py::none(),
      py::arg("nonfinite") = py::none());
  m.def(
      "write_fingerprints",
      [](Session* s, const std::string& what, const std::string& why, bool per_param,
         const std::vector<uint64_t>& hashes, const std::string& fn) {
        probes::records::WriteFingerprints(s, what, why, per_param, hashes, fn);
      },
      py::arg("session"), py::arg("what"), py::arg("why"), py::arg("per_param"), py::arg("hashes"),
      py::arg("fn") = std::string());
  m.def("write_loader", &probes::records::WriteLoader, py::arg("session"), py::arg("wait"),
        py::arg("produce"), py::arg("samples"), py::arg("batch") = 0);
  m.def("write_rng", &probes::records::WriteRng, py::arg("session"), py::arg("stream"),
        py::arg("why"), py::arg("seed"), py::arg("state_hash"));
  m.def("write_clip", &probes::records::WriteClip, py::arg("session"), py::arg("unscaled"),
        py::arg("norm"), py::arg("max"));
  m.def(
      "write_sampler",
      [](Session* s, int64_t epoch, int64_t sampler_epoch, int64_t seed,
         const std::vector<uint64_t>& indices, int64_t dataset_size) {
        probes::records::SamplerRecord r;
        r.epoch = epoch;
        r.sampler_epoch = sampler_epoch;
        r.seed = seed;
        r.n = static_cast<int64_t>(indices.size());
        probes::Fingerprinter order;
        order.Add(indices.data(), indices.size() * sizeof(uint64_t));
        r.order = order.Digest();
        std::vector<uint64_t> sorted = indices;
        std::sort(sorted.begin(), sorted.end());
        probes::Fingerprinter set;
        set.Add(sorted.data(), sorted.size() * sizeof(uint64_t));
        r.set = set.Digest();
        if (s->full()) r.indices = &indices;
        r.members = &indices;
        r.dataset_size = dataset_size;
        probes::records::WriteSampler(s, r);
      },
      py::arg("session"), py::arg("epoch"), py::arg("sampler_epoch"), py::arg("seed"),
      py::arg("indices"), py::arg("dataset_size"));
  m.def(
      "write_scaler",
      [](Session* s, double scale, bool inf_local, bool inf_global, bool skipped,
         std::optional<std::string> event, double norm_scaled, double norm) {
        probes::records::ScalerRecord r;
        r.scale = scale;
        r.inf_local = inf_local;
        r.inf_global = inf_global;
        r.skipped = skipped;
        r.event = event ? event->c_str() : nullptr;
        r.norm_scaled = norm_scaled;
        r.norm = norm;
        probes::records::WriteScaler(s, r);
      },
      py::arg("session"), py::arg("scale"), py::arg("inf_local"), py::arg("inf_global"),
      py::arg("skipped"), py::arg("event") = py::none(), py::arg("norm_scaled") = 0.0,
      py::arg("norm") = 0.0);
  m.def(
      "write_checkpoint",
      [](Session* s, std::string op, std::string path, int64_t bytes, uint64_t hash,
         int64_t ckpt_step, int64_t epoch, int64_t dur, std::string map_location,
         bool prefix_stripped, std::vector<std::string> missing,
         std::vector<std::string> unexpected) {
        probes::records::CheckpointRecord r;
        r.op = std::move(op);
        r.path = std::move(path);
        r.bytes = bytes;
        r.hash = hash;
        r.ckpt_step = ckpt_step;
        r.epoch = epoch;
        r.dur = dur;
        r.map_location = std::move(map_location);
        r.prefix_stripped = prefix_stripped;
        r.missing = std::move(missing);
        r.unexpected = std::move(unexpected);
        probes::records::WriteCheckpoint(s, r);
      },
      py::arg("session"), py::arg("op"), py::arg("path"), py::arg("bytes"), py::arg("hash"),
      py::arg("ckpt_step"), py::arg("epoch"), py::arg("dur"), py::arg("map_location") = "",
      py::arg("prefix_stripped") = false, py::arg("missing") = std::vector<std::string>{},
      py::arg("unexpected") = std::vector<std::string>{});
}

}  // namespace dsdiag::python
