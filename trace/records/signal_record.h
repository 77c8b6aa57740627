// The `signal` record (docs/trace-format.md, "Other records"): the rank learnt it must stop
// (SIGTERM, SIGINT, ...). A `signal` with no `end` after it is a rank killed while stopping.
// Written by the session; read by the run's dispatch (rank fates) and rank-died.
//
//   {"type":"signal","step":7,"signal":"SIGTERM","signo":15}
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "trace/record.h"

namespace dsdiag::trace {
class JsonLine;
}  // namespace dsdiag::trace

namespace dsdiag::trace::records {

struct SignalKeys {
  static constexpr FieldKey signal{"signal"};  // its name, "SIGTERM"
  static constexpr FieldKey signo{"signo"};
};

struct SignalRecord {
  static constexpr std::string_view kType = rec::kSignal;
  std::string_view signal;
  int signo = 0;
};
void AppendFields(const SignalRecord& r, JsonLine* line);

class SignalView {
 public:
  explicit SignalView(const Record& r) : r_(r) {}
  std::optional<std::string_view> signal() const { return r_.Str(SignalKeys::signal); }
  std::optional<int64_t> signo() const { return r_.Int(SignalKeys::signo); }

 private:
  const Record& r_;
};

}  // namespace dsdiag::trace::records
