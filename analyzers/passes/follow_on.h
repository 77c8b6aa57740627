// What the follow-on passes share: reading a finding's evidence, and marking a finding as a
// follow-on of a cause — `info`, its summary and hint saying so, and the cause in its
// evidence ({"kind":..,"subject":..,"culprits":[..]}) — without changing its kind, ranks or
// step (findings_pass.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "analyzers/framework/finding.h"

namespace dsdiag::analyzers::follow_on {

// The integer member `key` of an evidence object, when it is one.
std::optional<int64_t> IntMember(const trace::JsonValue& object, std::string_view key);

// The collective a rank-died finding (warning or error) says its ranks were left waiting
// in: evidence `waiting_in` {pg, seq}.
std::optional<std::pair<int64_t, int64_t>> WaitingIn(const Finding& f);

// A rank-died finding (warning or error) that only says its ranks were stopped by a stop
// signal (SIGTERM, SIGINT): the launcher or a user tearing the job down.
bool StoppedBySignal(const Finding& f);

// The cause a follow-on points to.
struct Cause {
  std::string kind;
  std::string subject;
  std::vector<int> culprits;
};

// Sets evidence.follow_on_of to `cause`.
void SetCause(const Cause& cause, Finding* f);

// Makes `f` an info follow-on of `cause`: " ; <why>" ends its summary, `hint` replaces its
// hint, evidence.follow_on_of names the cause.
void MarkFollowOn(const Cause& cause, const std::string& why, const std::string& hint, Finding* f);

}  // namespace dsdiag::analyzers::follow_on
