#include "analyzers/passes/follow_on.h"

#include "analyzers/framework/finding_kinds.h"

namespace dsdiag::analyzers::follow_on {

using trace::JsonValue;

std::optional<int64_t> IntMember(const JsonValue& object, std::string_view key) {
  const JsonValue* v = object.Find(key);
  if (!v || v->kind() != JsonValue::Kind::kInt) return std::nullopt;
  return v->as_int();
}

std::optional<std::pair<int64_t, int64_t>> WaitingIn(const Finding& f) {
  if (f.kind != kind::kRankDied || f.severity == Severity::kInfo) return std::nullopt;
  const JsonValue* waiting = f.evidence.Find("waiting_in");
  if (!waiting || !waiting->is_object()) return std::nullopt;
  const auto pg = IntMember(*waiting, "pg");
  const auto seq = IntMember(*waiting, "seq");
  if (!pg || !seq) return std::nullopt;
  return std::make_pair(*pg, *seq);
}

bool StoppedBySignal(const Finding& f) {
  if (f.kind != kind::kRankDied || f.severity == Severity::kInfo || f.ranks.empty()) return false;
  const JsonValue* signal = f.evidence.Find("signal");
  if (!signal || signal->kind() != JsonValue::Kind::kString) return false;
  const std::string& name = signal->as_string();
  return name == "SIGTERM" || name == "SIGINT";
}

void SetCause(const Cause& cause, Finding* f) {
  JsonValue of = JsonValue::Object();
  of.Set("kind", cause.kind);
  of.Set("subject", cause.subject.empty() ? JsonValue() : JsonValue(cause.subject));
  JsonValue ranks = JsonValue::Array();
  for (int r : cause.culprits) ranks.Push(r);
  of.Set("culprits", std::move(ranks));
  f->evidence.Set("follow_on_of", std::move(of));
}

void MarkFollowOn(const Cause& cause, const std::string& why, const std::string& hint, Finding* f) {
  f->severity = Severity::kInfo;
  f->summary += "; " + why;
  SetCause(cause, f);
  f->hint = hint;
}

}  // namespace dsdiag::analyzers::follow_on
