// Finding: one diagnosis of a run — what is wrong (kind, severity), where (ranks, step,
// subject), why we think so (evidence) and what to do (hint). Analyzers produce them;
// `dsdiag compare` prints them as text or as the JSON of docs/contract.md ("dsdiag.findings/1").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trace/json_value.h"

namespace dsdiag::analyzers {

// Declared from the mildest up so that `a >= b` reads "a is at least as severe as b".
enum class Severity { kInfo, kWarning, kError };

std::string_view SeverityName(Severity severity);  // "info", "warning", "error"
std::optional<Severity> ParseSeverity(std::string_view text);

struct Finding {
  std::string kind;  // one of finding_kinds.h
  Severity severity = Severity::kInfo;
  std::vector<int> ranks;              // sorted, unique; the ranks the finding is about
  std::optional<int64_t> step;         // first step at which it holds
  std::optional<std::string> subject;  // parameter, collective, path, setting or file
  std::string summary;                 // one line a human reads
  trace::JsonValue evidence = trace::JsonValue::Object();
  std::string hint;  // what to do about it

  // Where the finding sits on a timeline: a rank-local CLOCK_MONOTONIC time of `ts_rank`
  // (timeline and report map it to rank 0's clock). Not part of the JSON output.
  std::optional<int64_t> ts_ns;
  std::optional<int> ts_rank;
};

// The order findings are shown in: severity (error first), then step (findings without a
// step last), then kind, then ranks, then subject. Total and deterministic.
bool FindingLess(const Finding& a, const Finding& b);
void SortFindings(std::vector<Finding>* findings);

// Sorts and removes duplicates, for analyzers that collect ranks in any order.
void NormalizeRanks(std::vector<int>* ranks);

// "0-3,5,7,8": the compact spelling of a sorted rank list, for summaries and text output.
std::string FormatRankRanges(const std::vector<int>& ranks);

}  // namespace dsdiag::analyzers
