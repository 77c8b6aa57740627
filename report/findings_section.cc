// The findings part of the report: what `dsdiag compare` prints, as HTML. Same order
// (severity, then step), same fields (docs/contract.md); every string is escaped.
#include <algorithm>
#include <array>

#include "report/html.h"
#include "report/sections.h"

namespace dsdiag::report {
namespace {

using analyzers::Finding;
using analyzers::Severity;
using trace::JsonValue;

// Larger arrays of objects stay compact JSON rather than a page-long table.
constexpr size_t kMaxEvidenceRows = 64;

std::string SevClass(Severity s) { return "sev-" + std::string(analyzers::SeverityName(s)); }

std::string StepText(const Finding& f) { return f.step ? std::to_string(*f.step) : "-"; }

std::string RanksText(const Finding& f) {
  return f.ranks.empty() ? "-" : analyzers::FormatRankRanges(f.ranks);
}

void AppendCounts(const std::vector<Finding>& findings, std::string* out) {
  std::array<int64_t, 3> counts{};
  for (const Finding& f : findings) ++counts[static_cast<size_t>(f.severity)];
  out->append("<p class=\"counts\">");
  for (Severity s : {Severity::kError, Severity::kWarning, Severity::kInfo}) {
    const int64_t n = counts[static_cast<size_t>(s)];
    const std::string name(analyzers::SeverityName(s));
    out->append("<span class=\"count " + SevClass(s) + (n ? "" : " zero") + "\" data-severity=\"" +
                name + "\" data-count=\"" + std::to_string(n) + "\"><b>" + std::to_string(n) +
                "</b> " + name + (n == 1 || name == "info" ? "" : "s") + "</span>");
  }
  out->append("</p>");
}

void AppendIndex(const std::vector<Finding>& findings, std::string* out) {
  out->append(
      "<table class=\"index\"><thead><tr><th>severity</th><th>kind</th><th>ranks</th>"
      "<th>step</th><th>subject</th><th>summary</th></tr></thead><tbody>");
  for (size_t i = 0; i < findings.size(); ++i) {
    const Finding& f = findings[i];
    const std::string sev(analyzers::SeverityName(f.severity));
    out->append("<tr><td><a class=\"badge " + SevClass(f.severity) + "\" href=\"#finding-" +
                std::to_string(i + 1) + "\">" + sev + "</a></td><td><code>");
    AppendEscaped(out, f.kind);
    out->append("</code></td><td>" + Escape(RanksText(f)) + "</td><td>" + StepText(f) +
                "</td><td><code>");
    AppendEscaped(out, f.subject.value_or(""));
    out->append("</code></td><td>");
    AppendEscaped(out, f.summary);
    out->append("</td></tr>");
  }
  out->append("</tbody></table>");
}

// Evidence values: strings as they are, anything else as compact JSON.
std::string EvidenceText(const JsonValue& v) {
  return v.kind() == JsonValue::Kind::kString ? v.as_string() : v.ToJson();
}

// An array of objects (one per rank, say) reads best as a table of its own.
bool IsTable(const JsonValue& v) {
  if (!v.is_array() || v.elements().empty() || v.elements().size() > kMaxEvidenceRows) return false;
  for (const JsonValue& e : v.elements())
    if (!e.is_object()) return false;
  return true;
}

// Inside such a table, an object (e.g. per-phase times) as "a: 1, b: 2": it wraps at the
// spaces instead of widening the table.
std::string CellText(const JsonValue& v) {
  if (!v.is_object()) return EvidenceText(v);
  std::string text;
  for (const auto& [key, value] : v.members())
    text += (text.empty() ? "" : ", ") + key + ": " + EvidenceText(value);
  return text;
}

void AppendTable(const JsonValue& rows, std::string* out) {
  std::vector<std::string> columns;
  for (const JsonValue& row : rows.elements())
    for (const auto& member : row.members())
      if (std::find(columns.begin(), columns.end(), member.first) == columns.end())
        columns.push_back(member.first);
  out->append("<div class=\"wide\"><table><thead><tr>");
  for (const std::string& c : columns) out->append("<th>" + Escape(c) + "</th>");
  out->append("</tr></thead><tbody>");
  for (const JsonValue& row : rows.elements()) {
    out->append("<tr>");
    for (const std::string& c : columns) {
      const JsonValue* v = row.Find(c);
      out->append(std::string(v && v->is_object() ? "<td class=\"obj\">" : "<td>") + "<code>" +
                  (v ? Escape(CellText(*v)) : std::string()) + "</code></td>");
    }
    out->append("</tr>");
  }
  out->append("</tbody></table></div>");
}

void AppendEvidence(const JsonValue& evidence, std::string* out) {
  if (!evidence.is_object() || evidence.members().empty()) return;
  out->append("<table class=\"evidence\"><tbody>");
  for (const auto& [key, value] : evidence.members()) {
    out->append("<tr><th>");
    AppendEscaped(out, key);
    out->append("</th><td>");
    if (IsTable(value)) {
      AppendTable(value, out);
    } else {
      out->append("<code>");
      AppendEscaped(out, EvidenceText(value));
      out->append("</code>");
    }
    out->append("</td></tr>");
  }
  out->append("</tbody></table>");
}

void AppendFinding(const Finding& f, size_t number, std::string* out) {
  const std::string sev(analyzers::SeverityName(f.severity));
  out->append("<article class=\"finding " + SevClass(f.severity) + "\" id=\"finding-" +
              std::to_string(number) + "\" data-kind=\"" + Escape(f.kind) + "\" data-severity=\"" +
              sev + "\"><h3><span class=\"badge " + SevClass(f.severity) + "\">" + sev +
              "</span> <code>");
  AppendEscaped(out, f.kind);
  out->append("</code></h3><dl class=\"where\"><dt>ranks</dt><dd>" + Escape(RanksText(f)) +
              "</dd><dt>step</dt><dd>" + StepText(f) + "</dd>");
  if (f.subject) {
    out->append("<dt>subject</dt><dd><code>");
    AppendEscaped(out, *f.subject);
    out->append("</code></dd>");
  }
  out->append("</dl><p class=\"summary\">");
  AppendEscaped(out, f.summary);
  out->append("</p>");
  AppendEvidence(f.evidence, out);
  if (!f.hint.empty()) {
    out->append("<p class=\"hint\"><b>What to do:</b> ");
    AppendEscaped(out, f.hint);
    out->append("</p>");
  }
  out->append("</article>");
}

}  // namespace

void AppendFindingsSection(const analyzers::CompareResult& compare, std::string* out) {
  const std::vector<Finding>& findings = compare.findings;
  out->append("<section id=\"findings\"><h2>Findings</h2>");
  AppendCounts(findings, out);
  if (findings.empty()) {
    out->append(
        "<p class=\"none\">No findings: nothing the analyzers check differs between the "
        "ranks.</p></section>");
    return;
  }
  AppendIndex(findings, out);
  for (size_t i = 0; i < findings.size(); ++i) AppendFinding(findings[i], i + 1, out);
  out->append("</section>");
}

}  // namespace dsdiag::report
