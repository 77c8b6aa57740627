// rank-died for a rank that crashed on a fatal signal (Fate::kFatalSignal): its `end` record
// was written by the probes' fatal-signal handler (probes/fatal_signals.h) and says which
// signal, where it came from and, for a fault, its code, address and the code that faulted:
//   {"type":"end",...,"reason":"signal","status":139,"signal":"SIGSEGV","origin":"fault",
//    "code":"SEGV_MAPERR","addr":"0x0","pc":"libc.so.6 (__memmove_avx_unaligned_erms+0x3b)"}
// The summary says how it died and where (the phase and the collective of its last-word
// flight dump, DeathView), the hint what such a death means: a fault in native code, an
// abort() outside std::terminate, or a signal another process sent.
#include <string>

#include "analyzers/kinds/common/evidence_text.h"
#include "analyzers/kinds/rank_died/rank_died_findings.h"

namespace dsdiag::analyzers::rank_died {
namespace {

using trace::JsonValue;

constexpr size_t kMaxCode = 120;  // the faulting code's description in a summary

// "invalid memory access at 0x10", "bus error at 0x7f..", ...: what the fault was.
std::string FaultText(const std::string& signal, const FatalSignalEnd& f) {
  std::string what = signal == "SIGSEGV"  ? "invalid memory access"
                     : signal == "SIGBUS" ? "bus error"
                     : signal == "SIGFPE" ? "arithmetic fault"
                                          : "illegal instruction";
  if (!f.addr.empty() && signal != "SIGILL") what += " at " + f.addr;
  if (!f.code.empty()) what += ", " + f.code;
  if (!f.pc.empty()) what += ", in " + Clip(f.pc, kMaxCode);
  return what;
}

// " with allreduce pg 0 seq 12 in flight" when the rank's last word has one pending: the
// thread that died may have been in it, or elsewhere while it ran (DDP's are asynchronous).
std::string InCollective(const DeathView& view, const RankState& s) {
  const auto waiting = view.Waiting(s);
  if (!waiting || waiting->from != "flight dump") return {};
  return " with " + (waiting->op.empty() ? std::string("a collective") : waiting->op) + " pg " +
         std::to_string(waiting->key.pg) + " seq " + std::to_string(waiting->key.seq) +
         " in flight";
}

std::string FaultHint(const std::string& signal, const FatalSignalEnd& f, bool in_collective) {
  std::string hint =
      "The rank crashed in native code — a C/C++ or CUDA extension, a custom op, a library "
      "torch calls — not in Python, so no traceback reached the trace. ";
  if (signal == "SIGSEGV") {
    hint += "SIGSEGV is an invalid memory access (evidence.fault.addr";
    hint += f.code == "SEGV_MAPERR"   ? "; SEGV_MAPERR: nothing is mapped there — a null, "
                                        "freed or out-of-range pointer"
            : f.code == "SEGV_ACCERR" ? "; SEGV_ACCERR: memory it may not touch so"
                                      : "";
    hint += "), or a stack overflow (deep recursion in native code). ";
  } else if (signal == "SIGBUS") {
    hint +=
        "SIGBUS is memory whose backing is gone: most often a mapped file shorter than its "
        "mapping — shared memory (/dev/shm) full or truncated under a DataLoader's or a "
        "tensor's storage (a container's 64 MB default: raise --shm-size) — or an unaligned "
        "access. ";
  } else if (signal == "SIGFPE") {
    hint += "SIGFPE is an integer division by zero or overflow in native code. ";
  } else {
    hint +=
        "SIGILL is an instruction this CPU lacks: a binary or extension built for a newer CPU "
        "(AVX-512, ...) or another architecture, or a trap a compiler put on a path it "
        "proved impossible. ";
  }
  if (!f.pc.empty()) hint += "evidence.fault.pc names the code that faulted. ";
  if (in_collective)
    hint +=
        "A collective was in flight (evidence.waiting_in): when the code that faulted is the "
        "backend's (Gloo, NCCL), suspect it or the tensors handed to it (freed, resized or on "
        "the wrong device while it ran). ";
  return hint +
         "Rerun that step with Python's faulthandler on (python -X faulthandler, or "
         "PYTHONFAULTHANDLER=1: the Python line that called into native code goes to stderr) "
         "or with core dumps on (ulimit -c unlimited) and read the native stack in gdb.";
}

std::string AbortHint() {
  return "Native code called abort(): a failed assertion or CHECK in a C/C++ library (torch's "
         "own, a backend's, an extension's), glibc finding the heap corrupt (\"double free "
         "or corruption\", \"free(): invalid pointer\"), or a fatal-error handler (CUDA, "
         "NCCL). Not std::terminate: an uncaught C++ exception would have been recorded with "
         "its message. What failed is the last thing the rank printed on stderr before it "
         "died: read the rank's log at that time; a core dump (ulimit -c unlimited) gives the "
         "stack.";
}

}  // namespace

void DescribeFatalSignal(const DeathView& view, const RankState& s, Finding* f) {
  const std::string signal = s.end.detail;
  const FatalSignalEnd how = s.records.fatal ? *s.records.fatal : FatalSignalEnd{};
  f->evidence.Set("signal", signal);
  f->evidence.Set("died_by", signal);
  if (s.records.fatal) {
    JsonValue fault = JsonValue::Object();
    fault.Set("origin", how.origin);
    if (how.sender > 0) fault.Set("sender", how.sender);
    if (!how.code.empty()) fault.Set("code", how.code);
    if (!how.addr.empty()) fault.Set("addr", how.addr);
    if (!how.pc.empty()) fault.Set("pc", how.pc);
    f->evidence.Set("fault", std::move(fault));
  }
  const std::string rank = "rank " + std::to_string(s.rank);
  const std::string in = InCollective(view, s);
  const std::string where = view.WhereText(s) + in;
  if (how.origin == "kill") {
    f->summary = rank + " was killed by " + signal + " from process " + std::to_string(how.sender) +
                 " " + where;
    f->hint = "Another process (evidence.fault.sender) sent " + signal +
              " to the rank: a watchdog or an operator asking for a core dump, not a fault "
              "of the rank's own. Check what runs beside the job.";
  } else if (signal == "SIGABRT") {
    f->summary = rank + " aborted (SIGABRT: abort() in native code) " + where;
    f->hint = AbortHint();
  } else {
    f->summary = rank + " crashed on " + signal + " " + where +
                 (how.origin == "fault" ? " (" + FaultText(signal, how) + ")" : "");
    f->hint = FaultHint(signal, how, !in.empty());
  }
}

}  // namespace dsdiag::analyzers::rank_died
