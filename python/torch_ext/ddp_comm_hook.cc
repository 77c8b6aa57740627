// dsdiag._ddp_hook_torch<major>_<minor>: DDP's communication hook in C++, built against one
// torch (python/CMakeLists.txt builds it for each Python lane whose torch ships its headers).
//
// Why C++: a Python hook costs every bucket a trip through the GIL on the backward's thread
// and another on the backend's thread for its future's callback, about 0.6 ms a step on a
// 2-rank CPU job whose step takes 8 (bench/README.md); DDP's own C++ hook costs nothing
// measurable. This one does what DDP's ALLREDUCE hook does (the bucket divided by the world
// size, then the process group's allreduce) and records what the Python hook records
// (dsdiag/torch/ddp/_comm_hook.py): a `coll` record per bucket through _core's probes
// (DdpHookApi, python/core/ddp_hook_api.h), and at completion, on the backend's thread, each
// parameter's reduced gradient hashed in place in the bucket. No Python runs per bucket.
//
// When the job registers its own hook, the Python one takes over (`delegate`): torch's own
// PythonCommHook runs dsdiag's Python hook, which runs the job's inside it.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/distributed/c10d/python_comm_hook.h>

#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/comm.hpp>
#include <torch/csrc/distributed/c10d/reducer.hpp>
#include <tuple>
#include <utility>
#include <vector>

#include "python/core/ddp_hook_api.h"

namespace py = pybind11;

namespace {

using dsdiag::python::DdpHookApi;

// The short dtype names of `coll` records (dsdiag/torch/_tensors.py's dtype_name).
std::string DtypeName(c10::ScalarType t) {
  switch (t) {
    case c10::ScalarType::Float:
      return "f32";
    case c10::ScalarType::Double:
      return "f64";
    case c10::ScalarType::Half:
      return "f16";
    case c10::ScalarType::BFloat16:
      return "bf16";
    case c10::ScalarType::Long:
      return "i64";
    case c10::ScalarType::Int:
      return "i32";
    case c10::ScalarType::Char:
      return "i8";
    case c10::ScalarType::Byte:
      return "u8";
    case c10::ScalarType::Bool:
      return "bool";
    default: {
      std::string name = c10::toString(t);
      for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      return name;
    }
  }
}

// One parameter's gradient inside a bucket: the parameter (its TensorImpl, what Python's
// `p._cdata` gives) and where its elements lie in the bucket.
struct Slice {
  uintptr_t param;
  size_t offset, nbytes;
};

// A parameter's gradient as the allreduce left it: the parameter's TensorImpl, the hash of
// its bytes in the bucket and of a sample of them.
struct ReducedGradient {
  uintptr_t param;
  uint64_t hash, sample;
};

// What the hook (owned by DDP's reducer), its Python handle and the callbacks of the
// allreduces in flight share. The last owner may be a callback on the backend's thread, so
// it holds nothing whose end needs another thread: no process group (the reducer owns it;
// its last reference dropped on its own worker thread would join that thread) and no Python
// object (the delegate lives in DelegateSlot).
class HookState {
 public:
  explicit HookState(const DdpHookApi& api) : api_(api) {}

  const DdpHookApi& api() const { return api_; }

  std::atomic<bool> recording{true};
  std::atomic<bool> reduced{false};  // some bucket's allreduce began since the last take
  // Allreduces issued whose callback has not returned. The backend's worker thread frees an
  // allreduce's work after its callbacks, and that work holds the issuing thread's torch
  // state, Python objects included: freed during interpreter shutdown it ends the process
  // (std::terminate). So at exit the Python side waits for this to reach 0, then lingers a
  // little, GIL released (dsdiag/torch/_futures.py).
  std::atomic<int64_t> in_flight{0};

  // From the backend's thread, once a bucket's allreduce ended.
  void Ended(void* op, bool failed, std::vector<ReducedGradient> hashes) {
    api_.completed(op, failed);
    std::lock_guard<std::mutex> lock(mu_);
    ended_ops_.push_back(op);
    for (auto& h : hashes) hashes_.push_back(h);
  }

  std::vector<ReducedGradient> TakeHashes() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::exchange(hashes_, {});
  }

  // On the job's thread: the `coll` records of the buckets that ended, in the order they did.
  void WriteEnded() {
    std::vector<void*> ops;
    {
      std::lock_guard<std::mutex> lock(mu_);
      ops.swap(ended_ops_);
    }
    for (void* op : ops) api_.write_and_free(op);
  }

 private:
  DdpHookApi api_;
  std::mutex mu_;
  std::vector<void*> ended_ops_;
  std::vector<ReducedGradient> hashes_;
};

// The job's own hook, once it registers one: torch's PythonCommHook (whose end takes the GIL),
// shared by the hook and its Python handle only.
class DelegateSlot {
 public:
  std::shared_ptr<c10d::CommHookInterface> get() {
    std::lock_guard<std::mutex> lock(mu_);
    return hook_;
  }
  void set(std::shared_ptr<c10d::CommHookInterface> hook) {
    std::lock_guard<std::mutex> lock(mu_);
    hook_ = std::move(hook);
  }

 private:
  std::mutex mu_;
  std::shared_ptr<c10d::CommHookInterface> hook_;
};

// Leaves the in-flight count when the callback returns, or throws.
class InFlight {
 public:
  explicit InFlight(HookState* state) : state_(state) {}
  ~InFlight() { state_->in_flight.fetch_sub(1); }
  InFlight(const InFlight&) = delete;
  InFlight& operator=(const InFlight&) = delete;

 private:
  HookState* state_;
};

std::vector<Slice> SlicesOf(const c10d::GradBucket& bucket) {
  std::vector<Slice> slices;
  size_t offset = 0;
  const size_t element = bucket.getBuffer().element_size();
  for (const at::Tensor& p : bucket.getParameters()) {
    const size_t nbytes = static_cast<size_t>(p.numel()) * element;
    slices.push_back({reinterpret_cast<uintptr_t>(p.unsafeGetTensorImpl()), offset, nbytes});
    offset += nbytes;
  }
  return slices;
}

class RecordingAllreduceHook final : public c10d::CommHookInterface {
 public:
  // `group`: the reducer's process group, which outlives its hook.
  RecordingAllreduceHook(std::shared_ptr<HookState> state, std::shared_ptr<DelegateSlot> delegate,
                         c10d::ProcessGroup* group, int pg, int64_t world_size)
      : state_(std::move(state)),
        delegate_(std::move(delegate)),
        group_(group),
        pg_(pg),
        world_size_(world_size) {}

  c10::intrusive_ptr<c10::ivalue::Future> runHook(c10d::GradBucket& bucket) override {
    if (auto delegate = delegate_->get()) return delegate->runHook(bucket);
    at::Tensor& buffer = bucket.getBufferRef();
    void* op = nullptr;
    if (state_->recording.load(std::memory_order_relaxed)) {
      state_->reduced.store(true, std::memory_order_relaxed);
      op = state_->api().begin_allreduce(
          state_->api().probes, pg_, DtypeName(buffer.scalar_type()).c_str(), buffer.numel(),
          buffer.numel() * buffer.element_size(), static_cast<int64_t>(bucket.getIndex()));
    }
    // DDP's ALLREDUCE hook: averaged, divided first so that fp16 does not overflow.
    buffer.div_(world_size_);
    std::vector<at::Tensor> tensors{buffer};
    state_->in_flight.fetch_add(1);
    auto future = group_->allreduce(tensors)->getFuture();
    std::vector<Slice> slices;
    if (op != nullptr) {
      state_->api().started(op);
      if (buffer.device().is_cpu()) slices = SlicesOf(bucket);  // device memory is not read
    }
    return future->then(
        [state = state_, op, buffer, slices = std::move(slices)](c10::ivalue::Future& f) {
          InFlight leaving(state.get());
          if (op == nullptr) return f.value();
          if (f.hasError()) {
            state->Ended(op, true, {});
            std::rethrow_exception(f.exception_ptr());
          }
          std::vector<ReducedGradient> hashes;
          hashes.reserve(slices.size());
          const auto* base = static_cast<const char*>(buffer.data_ptr());
          for (const Slice& s : slices) {
            const char* at = base + s.offset;
            hashes.push_back({s.param, state->api().fingerprint(at, s.nbytes),
                              state->api().sample(at, s.nbytes)});
          }
          state->Ended(op, false, std::move(hashes));
          return f.value();
        },
        future->elementType());
  }

  at::Tensor parseHookResult(const c10::IValue& result) override {
    // A tensor list from the allreduce, or the delegate's Python result.
    return c10d::detail::parseCppCommHookResult(result);
  }

 private:
  std::shared_ptr<HookState> state_;
  std::shared_ptr<DelegateSlot> delegate_;
  c10d::ProcessGroup* group_;
  int pg_;
  int64_t world_size_;
};

// The Python side's handle on one DDP's hook.
class HookHandle {
 public:
  HookHandle(std::shared_ptr<HookState> state, std::shared_ptr<DelegateSlot> delegate)
      : state_(std::move(state)), delegate_(std::move(delegate)) {}

  void Delegate(py::object state, py::object hook) {
    delegate_->set(std::make_shared<c10d::PythonCommHook>(std::move(state), std::move(hook)));
  }
  bool TakeReduced() { return state_->reduced.exchange(false); }
  std::vector<std::tuple<uintptr_t, uint64_t, uint64_t>> TakeHashes() {
    std::vector<std::tuple<uintptr_t, uint64_t, uint64_t>> out;
    for (const ReducedGradient& g : state_->TakeHashes())
      out.emplace_back(g.param, g.hash, g.sample);
    return out;
  }
  void WriteEnded() { state_->WriteEnded(); }
  void StopRecording() { state_->recording = false; }
  int64_t InFlightCount() { return state_->in_flight.load(); }

 private:
  std::shared_ptr<HookState> state_;
  std::shared_ptr<DelegateSlot> delegate_;
};

HookHandle Install(py::object reducer, py::object process_group, int64_t world_size, int pg,
                   py::capsule api_capsule) {
  if (std::string(api_capsule.name()) != dsdiag::python::kDdpHookApiCapsule)
    throw py::type_error("not dsdiag._core's DdpHookApi capsule");
  const auto* api = api_capsule.get_pointer<DdpHookApi>();
  if (api->version != dsdiag::python::kDdpHookApiVersion)
    throw py::value_error("dsdiag._core's DdpHookApi is version " + std::to_string(api->version) +
                          ", this hook was built for " +
                          std::to_string(dsdiag::python::kDdpHookApiVersion));
  auto& r = reducer.cast<c10d::Reducer&>();
  auto& group = process_group.cast<c10d::ProcessGroup&>();
  auto state = std::make_shared<HookState>(*api);
  auto delegate = std::make_shared<DelegateSlot>();
  r.register_comm_hook(
      std::make_unique<RecordingAllreduceHook>(state, delegate, &group, pg, world_size));
  return HookHandle(state, delegate);
}

}  // namespace

PYBIND11_MODULE(DSDIAG_TORCH_EXT_NAME, m) {
  m.doc() = "DDP's communication hook in C++, recording through dsdiag._core";
  py::class_<HookHandle>(m, "Hook")
      .def("delegate", &HookHandle::Delegate, py::arg("state"), py::arg("hook"),
           "From now on torch's PythonCommHook runs hook(state, bucket) instead.")
      .def("take_reduced", &HookHandle::TakeReduced)
      .def("take_after_sync", &HookHandle::TakeHashes,
           "[(parameter's TensorImpl address, hash of its reduced gradient, hash of a sample of "
           "it)] since the last take")
      .def("write_ended", &HookHandle::WriteEnded)
      .def("stop_recording", &HookHandle::StopRecording)
      .def("in_flight", &HookHandle::InFlightCount,
           "Allreduces issued whose callback on the backend's thread has not returned.");
  m.def("install", &Install, py::arg("reducer"), py::arg("process_group"), py::arg("world_size"),
        py::arg("pg"), py::arg("api"),
        "Registers the hook on a DDP's reducer (before its first backward, as DDP requires).");
}
