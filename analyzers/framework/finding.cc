#include "analyzers/framework/finding.h"

#include <algorithm>
#include <tuple>

namespace dsdiag::analyzers {

std::string_view SeverityName(Severity severity) {
  switch (severity) {
    case Severity::kInfo:
      return "info";
    case Severity::kWarning:
      return "warning";
    case Severity::kError:
      return "error";
  }
  return "info";
}

std::optional<Severity> ParseSeverity(std::string_view text) {
  for (Severity s : {Severity::kInfo, Severity::kWarning, Severity::kError})
    if (SeverityName(s) == text) return s;
  return std::nullopt;
}

bool FindingLess(const Finding& a, const Finding& b) {
  if (a.severity != b.severity) return a.severity > b.severity;
  // A finding without a step sorts after every finding with one.
  if (a.step.has_value() != b.step.has_value()) return a.step.has_value();
  if (a.step != b.step) return *a.step < *b.step;
  return std::tie(a.kind, a.ranks, a.subject, a.summary) <
         std::tie(b.kind, b.ranks, b.subject, b.summary);
}

void SortFindings(std::vector<Finding>* findings) {
  std::stable_sort(findings->begin(), findings->end(), FindingLess);
}

void NormalizeRanks(std::vector<int>* ranks) {
  std::sort(ranks->begin(), ranks->end());
  ranks->erase(std::unique(ranks->begin(), ranks->end()), ranks->end());
}

std::string FormatRankRanges(const std::vector<int>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!out.empty()) out.push_back(',');
    out += std::to_string(ranks[i]);
    if (j > i) out += (j == i + 1 ? "," : "-") + std::to_string(ranks[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace dsdiag::analyzers
