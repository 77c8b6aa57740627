// dsdiag._core: RankProbes, the session and its phase spans, collective ops — the probes'
// torch-free core as the Python package drives it. Everything is recorded here, in C++:
// the Python side only hooks PyTorch and hands over what it saw.
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "probes/collective_op.h"
#include "probes/peer_op.h"
#include "probes/phase.h"
#include "probes/rank_probes.h"
#include "python/core/bindings.h"
#include "python/core/json_convert.h"
#include "python/core/python_store.h"
#include "trace/flight_dump.h"
#include "trace/peer_counts.h"

namespace dsdiag::python {

namespace py = pybind11;
using probes::Phase;
using probes::RankProbes;
using probes::RankProbesConfig;
using probes::Session;

namespace {

Phase PhaseByName(const std::string& name) {
  for (int i = 0; i < probes::kPhaseCount; ++i) {
    const Phase p = static_cast<Phase>(i);
    if (probes::PhaseName(p) == name) return p;
  }
  throw py::value_error("unknown phase '" + name +
                        "': expected data, forward, backward, sync, optimizer or checkpoint");
}

// A phase as a Python context manager: `with session.phase("forward"): ...`. PhaseScope is
// stack-only in C++; here it lives in the span object, entered and left on one thread.
class PhaseSpan {
 public:
  PhaseSpan(Session* session, Phase phase) : session_(session), phase_(phase) {}
  void Enter() { scope_.emplace(session_, phase_); }
  // Left by a Python exception: the phase stays current for the error record and the dump.
  void Exit(bool by_exception) {
    if (by_exception && scope_) scope_->MarkLeftByException();
    scope_.reset();
  }

 private:
  Session* session_;
  Phase phase_;
  std::optional<probes::PhaseScope> scope_;
};

// config: a dict with the RankProbesConfig fields; `header_config` and `sections` are dicts.
RankProbesConfig ConfigFrom(const py::dict& d) {
  RankProbesConfig c = RankProbesConfig::FromEnvironment();
  auto get = [&](const char* key) -> py::object {
    return d.contains(key) ? py::reinterpret_borrow<py::object>(d[key]) : py::none();
  };
  if (auto v = get("mode"); !v.is_none()) {
    const auto mode = probes::ParseMode(v.cast<std::string>());
    if (!mode) throw py::value_error("mode: expected off, light or full");
    c.mode = *mode;
  }
  if (auto v = get("run_dir"); !v.is_none()) c.run_dir = v.cast<std::string>();
  if (auto v = get("rank"); !v.is_none()) c.rank = v.cast<int>();
  if (auto v = get("world_size"); !v.is_none()) c.world_size = v.cast<int>();
  if (auto v = get("local_rank"); !v.is_none()) c.local_rank = v.cast<int>();
  if (auto v = get("run_id"); !v.is_none()) c.run_id = v.cast<std::string>();
  if (auto v = get("collective_timeout_s"); !v.is_none()) c.collective_timeout_s = v.cast<double>();
  if (auto v = get("stop_signals"); !v.is_none()) c.stop_signals = v.cast<bool>();
  if (auto v = get("end_on_collective_timeout"); !v.is_none())
    c.end_on_collective_timeout = v.cast<bool>();
  // Python's own excepthook says more than std::terminate could: off unless asked.
  c.record_terminate = false;
  if (auto v = get("record_terminate"); !v.is_none()) c.record_terminate = v.cast<bool>();
  // A segfault or an abort() in native code never reaches Python at all: on unless asked.
  if (auto v = get("record_fatal_signals"); !v.is_none()) c.record_fatal_signals = v.cast<bool>();
  if (auto v = get("header_config"); !v.is_none()) c.header.config = ToJson(v);
  if (auto v = get("versions"); !v.is_none()) {
    for (const auto& [k, value] : v.cast<py::dict>())
      c.header.versions[py::str(k)] = py::str(value).cast<std::string>();
  }
  if (auto v = get("sections"); !v.is_none()) c.header.sections = ToJson(v);
  return c;
}

std::unique_ptr<RankProbes> Start(const py::dict& config, py::object store) {
  RankProbesConfig c = ConfigFrom(config);
  std::string error;
  std::unique_ptr<RankProbes> probes;
  if (store.is_none()) {
    probes = RankProbes::Start(std::move(c), static_cast<probes::KeyValueStore*>(nullptr), &error);
  } else {
    probes =
        RankProbes::Start(std::move(c), std::make_unique<PythonStore>(std::move(store)), &error);
  }
  if (!probes) throw std::runtime_error(error);
  return probes;
}

// The flight recorder's stack provider around a Python callable returning
// [(thread name, [frame, ...]), ...]. A dump may come from any thread, with or without the
// GIL, while the main thread holds it in a C call: the callable runs on a thread of its
// own that waits for the GIL, and the dump waits for it at most `kStackWait` — then it is
// written without stacks (the waiting thread is left to finish on its own).
constexpr auto kStackWait = std::chrono::seconds(2);

std::vector<trace::ThreadStack> StacksFrom(const py::object& provider) {
  std::vector<trace::ThreadStack> stacks;
  try {
    for (const auto& item : provider()) {
      auto pair = item.cast<py::tuple>();
      trace::ThreadStack t;
      t.thread = pair[0].cast<std::string>();
      t.frames = pair[1].cast<std::vector<std::string>>();
      stacks.push_back(std::move(t));
    }
  } catch (py::error_already_set&) {
    stacks.clear();  // no stacks this time; the dump itself goes on
  } catch (py::cast_error&) {
    stacks.clear();
  }
  return stacks;
}

// `convert(*callable)` with the GIL held, on a thread of its own when this one lacks it,
// waited for at most kStackWait; `fallback` when it did not finish in time.
template <typename T>
T CallWithGil(std::shared_ptr<py::object> callable, T (*convert)(const py::object&), T fallback) {
  // Asked from a thread that holds the GIL (an excepthook's dump): call it here.
  if (PyGILState_Check()) return convert(*callable);
  struct Result {
    std::mutex mu;
    std::condition_variable done_cv;
    bool done = false;
    T value;
  };
  auto result = std::make_shared<Result>();
  std::thread([callable, convert, result]() mutable {
    T value;
    {
      py::gil_scoped_acquire gil;
      value = convert(*callable);
      // Let go of the callable while holding the GIL: were this the last reference (the
      // provider cleared meanwhile), releasing it later would take the GIL again, maybe
      // after Python has shut down, which ends this thread mid-destructor (an abort).
      callable.reset();
    }
    std::lock_guard<std::mutex> lock(result->mu);
    result->value = std::move(value);
    result->done = true;
    result->done_cv.notify_all();
  }).detach();
  std::unique_lock<std::mutex> lock(result->mu);
  if (!result->done_cv.wait_for(lock, kStackWait, [&] { return result->done; })) return fallback;
  return std::move(result->value);
}

bool RefreshFrom(const py::object& refresher) {
  try {
    refresher();
  } catch (py::error_already_set&) {
    return false;  // the entries stay as they were; the dump or the watchdog goes on
  }
  return true;
}

// A Python callable held by the core: released with the GIL, from whichever thread drops it.
std::shared_ptr<py::object> Held(py::object callable) {
  return std::shared_ptr<py::object>(new py::object(std::move(callable)), [](py::object* o) {
    py::gil_scoped_acquire gil;
    delete o;
  });
}

}  // namespace

void BindProbes(py::module_& m) {
  py::class_<PhaseSpan>(m, "PhaseSpan")
      .def(
          "__enter__",
          [](PhaseSpan& s) -> PhaseSpan& {
            s.Enter();
            return s;
          },
          py::return_value_policy::reference)
      .def("__exit__", [](PhaseSpan& s, py::args args) {
        s.Exit(args.size() > 0 && !args[0].is_none());
        return false;
      });

  py::class_<Session>(m, "Session")
      .def_property_readonly("on", &Session::on)
      .def_property_readonly("full", &Session::full)
      .def_property_readonly("rank", &Session::rank)
      .def_property_readonly("current_step", &Session::current_step)
      .def("begin_step", &Session::BeginStep, py::arg("step"), py::arg("epoch"))
      .def(
          "end_step",
          [](Session& s, double loss, double global_loss, double lr, int64_t samples,
             int64_t device_step, const std::vector<std::pair<std::string, int64_t>>& device) {
            std::vector<trace::records::PhaseTime> times;
            times.reserve(device.size());
            for (const auto& [name, ns] : device) times.push_back({name, ns});
            probes::StepSummary summary{loss, global_loss, lr, samples};
            if (device_step >= 0) summary.device = {device_step, times.data(), times.size()};
            s.EndStep(summary);
          },
          py::arg("loss") = NAN, py::arg("global_loss") = NAN, py::arg("lr") = NAN,
          py::arg("samples") = 0, py::arg("device_step") = -1,
          py::arg("device") = std::vector<std::pair<std::string, int64_t>>{})
      .def(
          "phase",
          [](Session& s, const std::string& name) {
            return std::make_unique<PhaseSpan>(&s, PhaseByName(name));
          },
          py::keep_alive<0, 1>())
      .def("record_error", &Session::RecordError)
      .def("record_signal", &Session::RecordSignal)
      .def("mark", &Session::Mark)
      .def("end", &Session::End, py::arg("reason"), py::arg("status"), py::arg("detail") = "")
      .def("add_probe_time", &Session::AddProbeTime)
      .def_property_readonly("probe_ns", &Session::probe_ns,
                             "Time spent in the probes so far (the C++ core's and what Python "
                             "added), ns: each step record carries its share as probe_ns.");

  // seq and Started are IssuedCollective's: through lambdas, pybind11 binds them to this
  // class (a base's member pointer would want the base registered).
  py::class_<probes::CollectiveOp>(m, "CollectiveOp")
      .def_property_readonly("seq", [](const probes::CollectiveOp& op) { return op.seq(); })
      .def_property_readonly("completed", &probes::CollectiveOp::completed)
      .def("started", [](probes::CollectiveOp& op) { op.Started(); })
      .def("mark_completed", &probes::CollectiveOp::Completed, py::arg("failed") = false,
           py::call_guard<py::gil_scoped_release>())
      .def("mark_queued_on_device", &probes::CollectiveOp::QueuedOnDevice,
           py::call_guard<py::gil_scoped_release>())
      .def("mark_device_completed", &probes::CollectiveOp::DeviceCompleted,
           py::call_guard<py::gil_scoped_release>())
      .def("write", &probes::CollectiveOp::Write);

  py::class_<probes::PeerOp>(m, "PeerOp")
      .def_property_readonly("seq", &probes::PeerOp::seq)
      .def_property_readonly("peer", &probes::PeerOp::peer)
      .def_property_readonly("completed", &probes::PeerOp::completed)
      .def("set_peer", &probes::PeerOp::SetPeer, py::arg("peer"), py::arg("group_peer"))
      .def("waiting", &probes::PeerOp::Waiting)
      .def("mark_completed", &probes::PeerOp::Completed, py::arg("failed") = false,
           py::call_guard<py::gil_scoped_release>())
      .def("write", &probes::PeerOp::Write);

  py::class_<RankProbes>(m, "RankProbes")
      .def_static("start", &Start, py::arg("config"), py::arg("store") = py::none(),
                  "Starts this rank's probes; raises RuntimeError saying why it could not.")
      .def_property_readonly("session", &RankProbes::session,
                             py::return_value_policy::reference_internal)
      .def_property_readonly("run_dir", &RankProbes::run_dir)
      .def_property_readonly("run_id", &RankProbes::run_id)
      .def(
          "collective",
          [](RankProbes& p, int pg, std::string op, std::string dtype, int64_t count, int64_t bytes,
             std::string tag, std::vector<int64_t> send, std::vector<int64_t> recv,
             std::vector<int64_t> peers, int64_t site) {
            trace::PeerCounts counts{std::move(peers), std::move(send), std::move(recv)};
            if (!counts.empty() && !counts.consistent())
              throw py::value_error("send and recv need one count per peer");
            // The site is the job's line (call_site), never this file's: no SourceLocation.
            return std::make_unique<probes::CollectiveOp>(
                p.collectives(), pg,
                trace::Collective{std::move(op), std::move(dtype), count, bytes, std::move(tag),
                                  site},
                std::move(counts), probes::SourceLocation{});
          },
          py::arg("pg"), py::arg("op"), py::arg("dtype"), py::arg("count"), py::arg("bytes"),
          py::arg("tag"), py::arg("send") = std::vector<int64_t>{},
          py::arg("recv") = std::vector<int64_t>{}, py::arg("peers") = std::vector<int64_t>{},
          py::arg("site") = 0,
          "One collective issued; send/recv: the elements it sends to and receives from each "
          "rank of its group (an all_to_all with split sizes), peers: the group's global ranks "
          "when it is not the default group; site: call_site()'s id of the job's line.",
          py::keep_alive<0, 1>())
      .def(
          "peer_op",
          [](RankProbes& p, int pg, std::string op, int64_t peer, int64_t group_peer,
             int64_t match_tag, std::string dtype, int64_t count, int64_t bytes, std::string tag,
             int64_t site) {
            if (op != "send" && op != "recv") throw py::value_error("op is 'send' or 'recv'");
            return std::make_unique<probes::PeerOp>(
                p.collectives(),
                probes::PeerMessage{pg,
                                    trace::Collective{std::move(op), std::move(dtype), count, bytes,
                                                      std::move(tag), site},
                                    peer, group_peer, match_tag},
                probes::SourceLocation{});
          },
          py::arg("pg"), py::arg("op"), py::arg("peer"), py::arg("group_peer"),
          py::arg("match_tag"), py::arg("dtype"), py::arg("count"), py::arg("bytes"),
          py::arg("tag"), py::arg("site") = 0,
          "One point-to-point message posted: op 'send' or 'recv', peer its global rank (-1: a "
          "recv from any source, set_peer() once known), group_peer its rank in the group; "
          "numbered per pair, apart from the group's collectives.",
          py::keep_alive<0, 1>())
      .def("next_seq", [](RankProbes& p, int pg) { return p.collectives()->next_seq(pg); })
      .def(
          "call_site",
          [](RankProbes& p, const std::string& file, int64_t line, const std::string& fn) {
            return p.collectives()->SiteId(file, line, fn);
          },
          py::arg("file"), py::arg("line"), py::arg("fn"),
          "The id of a line of the job that issues collectives (its `site` record is written "
          "the first time); 0 while the probes are off.")
      .def(
          "dump",
          [](RankProbes& p, const std::string& reason) { p.watchdog()->DumpNow(reason.c_str()); },
          py::call_guard<py::gil_scoped_release>())
      .def(
          "set_stack_provider",
          [](RankProbes& p, py::object provider) {
            if (provider.is_none()) {  // at the end of the run, before Python shuts down
              p.recorder()->SetStackProvider({});
              return;
            }
            auto shared = Held(std::move(provider));
            p.recorder()->SetStackProvider([shared] {
              return CallWithGil<std::vector<trace::ThreadStack>>(shared, StacksFrom, {});
            });
          },
          "Every flight dump asks provider() for [(thread, [frames])] (bounded wait).")
      .def(
          "set_refresher",
          [](RankProbes& p, py::object refresher) {
            if (refresher.is_none()) {
              p.recorder()->SetRefresher({});
              return;
            }
            auto shared = Held(std::move(refresher));
            p.recorder()->SetRefresher([shared] { CallWithGil<bool>(shared, RefreshFrom, false); });
          },
          "Before each dump and each watchdog timeout, refresher() completes the collectives "
          "queued on a device that are done there (bounded wait).")
      .def("measure_clock", &RankProbes::MeasureClock)
      .def("finish", &RankProbes::Finish, py::arg("status") = 0);
}

}  // namespace dsdiag::python
