#include "analyzers/kinds/rank_died/rank_fate.h"

#include "analyzers/kinds/common/watchdog_message.h"
#include "trace/peer_loss.h"
#include "trace/record_types.h"
#include "trace/records/end_record.h"
#include "trace/records/error_record.h"

namespace dsdiag::analyzers::rank_died {

namespace records = trace::records;

using trace::JsonValue;

std::string SignalOf(const RankState& s) {
  if (s.fate == Fate::kSignal || s.fate == Fate::kFatalSignal) return s.end.detail;
  return s.records.signal ? s.records.signal->name : std::string();
}

Fate Classify(const RankEnd& end, const RankRecords& records) {
  if (!end.end_seen) {
    if (records.signal) return Fate::kKilledAfterSignal;
    const bool at_block = end.bytes_read > 0 && end.bytes_read % kBlockBytes == 0;
    return end.truncated_tail && at_block ? Fate::kCutShort : Fate::kNoEnd;
  }
  if (end.reason == trace::records::end_reason::kOk)
    return end.status.value_or(0) == 0 ? Fate::kClean : Fate::kOkNonZero;
  if (end.reason == trace::records::end_reason::kSignal)
    return IsFatalSignal(end.detail) ? Fate::kFatalSignal : Fate::kSignal;
  // An error that is a lost peer (Gloo's "Connection reset by peer") follows another
  // rank's failure, as a `peer-failure` end does.
  if (end.reason == trace::records::end_reason::kError) {
    return trace::LooksLikePeerLoss(end.detail) ? Fate::kPeerFailure : Fate::kError;
  }
  if (end.reason == trace::records::end_reason::kPeerFailure) return Fate::kPeerFailure;
  return Fate::kOtherReason;
}

bool IsFailure(Fate fate) {
  return fate == Fate::kNoEnd || fate == Fate::kKilledAfterSignal || fate == Fate::kSignal ||
         fate == Fate::kFatalSignal || fate == Fate::kError;
}

bool EndsProcess(std::string_view signal) { return signal != "SIGUSR1"; }

bool IsFatalSignal(std::string_view signal) {
  return signal == "SIGSEGV" || signal == "SIGBUS" || signal == "SIGABRT" || signal == "SIGFPE" ||
         signal == "SIGILL";
}

bool IsProgress(int type) {
  return type == trace::rec_id::kStepBegin || type == trace::rec_id::kStep ||
         type == trace::rec_id::kPhase || type == trace::rec_id::kCollective;
}

std::optional<WaitingIn> NamedIn(const trace::Record& r) {
  const records::ErrorView error(r);
  const auto pg = error.pg();
  const auto seq = error.seq();
  if (pg && seq && *pg >= 0 && *pg <= INT32_MAX) {
    return WaitingIn{{static_cast<int>(*pg), *seq},
                     std::string(error.op().value_or("")),
                     std::string(error.tag().value_or("")),
                     r.step(),
                     "error record"};
  }
  const auto named = ParseNamedCollective(error.message().value_or(""));
  if (!named) return std::nullopt;
  return WaitingIn{{named->pg, named->seq}, named->op, named->tag, r.step(), "error record"};
}

std::optional<FatalSignalEnd> FatalSignalOf(const trace::Record& end) {
  const records::EndView view(end);
  const auto origin = view.origin();
  if (view.reason().value_or("") != trace::records::end_reason::kSignal || !origin)
    return std::nullopt;
  FatalSignalEnd f;
  f.origin = std::string(*origin);
  f.sender = view.sender().value_or(0);
  f.code = std::string(view.code().value_or(""));
  f.addr = std::string(view.addr().value_or(""));
  f.pc = std::string(view.pc().value_or(""));
  return f;
}

JsonValue WaitingJson(const WaitingIn& w) {
  JsonValue v = JsonValue::Object();
  v.Set("pg", w.key.pg);
  v.Set("seq", w.key.seq);
  v.Set("op", w.op.empty() ? JsonValue() : JsonValue(w.op));
  v.Set("tag", w.tag.empty() ? JsonValue() : JsonValue(w.tag));
  v.Set("step", w.step ? JsonValue(*w.step) : JsonValue());
  v.Set("from", w.from);
  return v;
}

std::string StepText(const std::optional<int64_t>& step) {
  return step ? "during step " + std::to_string(*step) : "before its first step";
}

}  // namespace dsdiag::analyzers::rank_died
