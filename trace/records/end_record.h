// The `end` record (docs/trace-format.md, "`end`"): the last line of every exit dsdiag
// controls — why the rank ended, the exit status that follows, the signal's name or the
// error's message, and the time the probes spent in themselves over the run. Its absence is
// what rank-died looks for. Written by the session (Session::End); read by the run's
// dispatch (rank fates), the timeline and the report.
//
//   {"type":"end","ts":98765,"step":50,"reason":"ok","status":0,"probe_ns":4312000}
//
// A rank killed by a fatal signal (probes/fatal_signals.h) says how, in four more fields:
//   {"type":"end",...,"reason":"signal","status":139,"signal":"SIGSEGV","origin":"fault",
//    "code":"SEGV_MAPERR","addr":"0x0","pc":"libc.so.6 (__memmove_avx_unaligned_erms+0x3b)"}
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "trace/record.h"

namespace dsdiag::trace {
class JsonLine;
}  // namespace dsdiag::trace

namespace dsdiag::trace::records {

struct EndKeys {
  static constexpr FieldKey reason{"reason"};  // "ok", "signal", "error", "peer-failure", ...
  static constexpr FieldKey status{"status"};
  static constexpr FieldKey signal{"signal"};  // reason "signal": its name
  static constexpr FieldKey error{"error"};    // other reasons: the message, when there is one
  static constexpr FieldKey probe_ns{"probe_ns"};
  // A fatal signal's: "fault" (the CPU faulted), "raise" (the process sent it to itself:
  // abort(), raise()) or "kill" (another process sent it; `sender` is its pid).
  static constexpr FieldKey origin{"origin"};
  static constexpr FieldKey sender{"sender"};
  static constexpr FieldKey code{"code"};  // a fault's si_code: "SEGV_MAPERR", "BUS_ADRERR", ...
  static constexpr FieldKey addr{"addr"};  // a fault's address, "0x..."
  static constexpr FieldKey pc{"pc"};      // where it faulted: "libfoo.so (symbol+0x1c)"
};

// The values of `reason`: why the rank ended.
namespace end_reason {
inline constexpr std::string_view kOk = "ok";          // the loop finished (any status)
inline constexpr std::string_view kSignal = "signal";  // a stop or fatal signal; `signal`
inline constexpr std::string_view kError = "error";    // an exception, a timeout; `error`
// Stopped because another rank failed (a collective's error naming a lost peer).
inline constexpr std::string_view kPeerFailure = "peer-failure";
}  // namespace end_reason

// How a fatal signal came (EndKeys::origin); empty strings are left out.
struct FatalSignalFields {
  std::string_view origin;
  int64_t sender = 0;  // "kill": the sender's pid
  std::string_view code;
  std::string_view addr;
  std::string_view pc;
};

struct EndRecord {
  static constexpr std::string_view kType = rec::kEnd;
  std::string_view reason;
  int status = 0;
  std::string_view detail;  // the signal's name (reason "signal") or the error; empty: none
  int64_t probe_ns = -1;    // negative: left out (synth: no probes)
  const FatalSignalFields* fatal = nullptr;  // reason "signal", a fatal one: how it came
};
void AppendFields(const EndRecord& r, JsonLine* line);

class EndView {
 public:
  explicit EndView(const Record& r) : r_(r) {}
  std::optional<std::string_view> reason() const { return r_.Str(EndKeys::reason); }
  std::optional<int64_t> status() const { return r_.Int(EndKeys::status); }
  std::optional<std::string_view> signal() const { return r_.Str(EndKeys::signal); }
  std::optional<std::string_view> error() const { return r_.Str(EndKeys::error); }
  std::optional<int64_t> probe_ns() const { return r_.Int(EndKeys::probe_ns); }
  std::optional<std::string_view> origin() const { return r_.Str(EndKeys::origin); }
  std::optional<int64_t> sender() const { return r_.Int(EndKeys::sender); }
  std::optional<std::string_view> code() const { return r_.Str(EndKeys::code); }
  std::optional<std::string_view> addr() const { return r_.Str(EndKeys::addr); }
  std::optional<std::string_view> pc() const { return r_.Str(EndKeys::pc); }

 private:
  const Record& r_;
};

}  // namespace dsdiag::trace::records
