// Helpers of the timeline tests: scratch dirs, small traces written with the real
// TraceWriter at chosen times, and the output parsed back (simdjson, into JsonValue trees)
// with lookups by what the tests ask about.
#pragma once

#include <gtest/gtest.h>
#include <simdjson.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/support/files.h"
#include "tests/support/rank_trace.h"
#include "tests/support/step_trace.h"
#include "tests/support/temp_dir.h"
#include "trace/json_value.h"
#include "trace/record_types.h"
#include "trace/records/coll_record.h"
#include "trace/records/phase_record.h"
#include "trace/records/step_begin_record.h"
#include "trace/records/step_record.h"
#include "trace/run_files.h"
#include "trace/trace_header.h"
#include "trace/trace_reader.h"
#include "trace/trace_writer.h"

namespace dsdiag::timeline::testing {

using test_support::AppendFile;
using test_support::ReadFile;
using test_support::SplitLines;

// A scratch dir named dsdiag-timeline-XXXXXX.
class TempDir : public test_support::TempDir {
 public:
  TempDir() : test_support::TempDir("timeline") {}
};

// A header for `rank` whose monotonic clock reads `mono` when its wall clock reads `wall`.
inline trace::TraceHeader Header(int rank, int world_size, int64_t mono, int64_t wall,
                                 int64_t offset, std::string host = "node0") {
  trace::TraceHeader h = test_support::TestHeader(
      {rank, world_size, "timeline-test", mono, wall, offset, /*offset_err=*/1000, host});
  h.config.Set("steps", 3);
  return h;
}

// One rank's trace (tests/support/rank_trace.h) with the timeline tests' shape of a step.
class RankTrace : public test_support::RankTrace {
 public:
  using test_support::RankTrace::RankTrace;
  // step_begin at t, then phases data/forward/backward/sync/optimizer of `phase` ns each,
  // one allreduce (pg 0, seq `seq`) entered at t + 2*phase + enter_delay lasting `coll`,
  // then the step record (loss, lr, samples 32; its collective totals say the allreduce
  // waited all but its last 0.1 ms; the probes took (step + 1) x 0.05 ms).
  void Step(int64_t step, int64_t t, int64_t phase, int64_t seq, int64_t enter_delay, int64_t coll,
            double loss) {
    namespace records = trace::records;
    static constexpr std::string_view kPhases[] = {trace::phase::kData, trace::phase::kForward,
                                                   trace::phase::kBackward, trace::phase::kSync,
                                                   trace::phase::kOptimizer};
    test_support::StepTrace s(step, t);
    for (int i = 0; i < 5; ++i) s.Phase(kPhases[i], t + i * phase, phase);
    records::CollRecord c;
    c.seq = seq;
    c.op = "allreduce";
    c.dtype = "f32";
    c.count = 1024;
    c.bytes = 4096;
    c.dur = coll;
    c.tag = "grad-bucket-0";
    s.Coll(c, t + 2 * phase + enter_delay);
    records::StepRecord& r = s.record();
    r.loss = loss;
    r.lr = 0.01;
    r.samples = 32;
    r.coll.written = records::StepCollTotals::Written::kAll;
    r.coll.n = 1;
    r.coll.bytes = 4096;
    r.coll.dur = coll;
    r.coll.wait = coll - 100000;
    r.probe_ns = int64_t{50000} * (step + 1);
    s.Write(writer());
  }
};

// The timeline output, parsed.
class Timeline {
 public:
  // Fails the test (and leaves events empty) when `json` is not one valid JSON object
  // with a traceEvents array.
  explicit Timeline(const std::string& json) {
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    auto error = parser.parse(json).get(doc);
    if (error) {
      ADD_FAILURE() << "timeline is not valid JSON: " << simdjson::error_message(error) << "\n"
                    << json.substr(0, 2000);
      return;
    }
    root_ = trace::ToJsonValue(doc);
    const trace::JsonValue* events = root_.Find("traceEvents");
    if (!events || !events->is_array()) {
      ADD_FAILURE() << "no traceEvents array";
      return;
    }
    valid_ = true;
  }
  bool valid() const { return valid_; }
  const trace::JsonValue& root() const { return root_; }
  const std::vector<trace::JsonValue>& events() const {
    static const std::vector<trace::JsonValue> kNone;
    const trace::JsonValue* e = root_.Find("traceEvents");
    return e ? e->elements() : kNone;
  }
  std::vector<const trace::JsonValue*> Where(
      const std::function<bool(const trace::JsonValue&)>& pred) const {
    std::vector<const trace::JsonValue*> out;
    for (const auto& e : events())
      if (pred(e)) out.push_back(&e);
    return out;
  }
  std::vector<const trace::JsonValue*> Phase(const std::string& ph) const {
    return Where([&](const trace::JsonValue& e) { return Str(e, "ph") == ph; });
  }
  // The one event with this ph, name and pid; null (and a test failure) otherwise.
  const trace::JsonValue* One(const std::string& ph, const std::string& name, int pid) const {
    auto found = Where([&](const trace::JsonValue& e) {
      return Str(e, "ph") == ph && Str(e, "name") == name && Int(e, "pid") == pid;
    });
    if (found.size() != 1) {
      ADD_FAILURE() << "expected one " << ph << " event '" << name << "' of pid " << pid
                    << ", found " << found.size();
      return nullptr;
    }
    return found.front();
  }
  // The name a metadata event gives (process_name / thread_name), or "".
  std::string MetaName(const std::string& what, int pid, int64_t tid = 0) const {
    for (const auto& e : events()) {
      if (Str(e, "ph") == "M" && Str(e, "name") == what && Int(e, "pid") == pid &&
          (what == "process_name" || Int(e, "tid") == tid))
        return Str(*e.Find("args"), "name");
    }
    return "";
  }

  static std::string Str(const trace::JsonValue& e, const std::string& key) {
    const trace::JsonValue* v = e.Find(key);
    return v && v->kind() == trace::JsonValue::Kind::kString ? v->as_string() : "";
  }
  static int64_t Int(const trace::JsonValue& e, const std::string& key) {
    const trace::JsonValue* v = e.Find(key);
    return v && !v->is_null() ? v->as_int() : -1;
  }
  static double Num(const trace::JsonValue& e, const std::string& key) {
    const trace::JsonValue* v = e.Find(key);
    return v && !v->is_null() ? v->as_double() : -1.0;
  }
  static const trace::JsonValue& Args(const trace::JsonValue& e) {
    static const trace::JsonValue kEmpty = trace::JsonValue::Object();
    const trace::JsonValue* a = e.Find("args");
    return a ? *a : kEmpty;
  }

 private:
  trace::JsonValue root_;
  bool valid_ = false;
};

}  // namespace dsdiag::timeline::testing
