#include "analyzers/output/findings_output.h"

#include <algorithm>
#include <array>
#include <cstdio>

#include "trace/json_line.h"
#include "trace/json_value.h"

namespace dsdiag::analyzers {
namespace {

using trace::JsonValue;

bool Shown(const Finding& f, const OutputOptions& options) {
  return f.severity >= options.min_severity;
}

std::array<int64_t, 3> CountBySeverity(const std::vector<Finding>& findings) {
  std::array<int64_t, 3> counts{};
  for (const auto& f : findings) ++counts[static_cast<size_t>(f.severity)];
  return counts;
}

// ---- JSON ----

void AppendIntArray(const std::vector<int>& values, std::string* out) {
  out->push_back('[');
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) out->push_back(',');
    out->append(std::to_string(values[i]));
  }
  out->push_back(']');
}

void AppendKey(std::string_view key, std::string* out) {
  trace::JsonLine::AppendQuoted(out, key);
  out->push_back(':');
}

void AppendRunJson(const CompareResult& result, std::string* out) {
  const RunSummary& run = result.run;
  const ReaderStats& st = result.stats;
  JsonValue stats = JsonValue::Object();
  stats.Set("files", st.files);
  stats.Set("files_excluded", st.files_excluded);
  stats.Set("flight_dumps", st.flight_dumps);
  stats.Set("records", st.records);
  stats.Set("lines", st.lines);
  stats.Set("bytes", st.bytes);
  stats.Set("malformed_lines", st.malformed_lines);
  stats.Set("truncated_tails", st.truncated_tails);
  stats.Set("lockstep", st.lockstep);

  out->append("{");
  AppendKey("dir", out);
  trace::JsonLine::AppendQuoted(out, run.dir);
  out->push_back(',');
  AppendKey("run_id", out);
  trace::JsonLine::AppendQuoted(out, run.run_id);
  out->append(",\"world_size\":" + std::to_string(run.world_size) + ",\"ranks_found\":");
  AppendIntArray(run.ranks_found, out);
  out->append(",\"ranks_missing\":");
  AppendIntArray(run.ranks_missing, out);
  out->append(",\"ranks_excluded\":");
  AppendIntArray(run.ranks_excluded, out);
  out->append(",\"steps\":" + std::to_string(run.steps) + ",\"stats\":");
  stats.AppendJson(out);
  out->append("}");
}

void AppendFindingJson(const Finding& f, std::string* out) {
  out->append("{\"kind\":");
  trace::JsonLine::AppendQuoted(out, f.kind);
  out->append(",\"severity\":");
  trace::JsonLine::AppendQuoted(out, SeverityName(f.severity));
  out->append(",\"ranks\":");
  AppendIntArray(f.ranks, out);
  out->append(",\"step\":");
  out->append(f.step ? std::to_string(*f.step) : "null");
  out->append(",\"subject\":");
  if (f.subject) {
    trace::JsonLine::AppendQuoted(out, *f.subject);
  } else {
    out->append("null");
  }
  out->append(",\"summary\":");
  trace::JsonLine::AppendQuoted(out, f.summary);
  out->append(",\"evidence\":");
  if (f.evidence.is_object()) {
    f.evidence.AppendJson(out);
  } else {
    out->append("{}");  // the contract promises an object
  }
  out->append(",\"hint\":");
  trace::JsonLine::AppendQuoted(out, f.hint);
  out->push_back('}');
}

// ---- text ----

constexpr size_t kWrapWidth = 100;
constexpr size_t kTableRanksWidth = 16;
constexpr size_t kTableSubjectWidth = 32;

const char* SeverityColor(Severity s) {
  switch (s) {
    case Severity::kError:
      return "\x1b[1;31m";
    case Severity::kWarning:
      return "\x1b[1;33m";
    case Severity::kInfo:
      return "\x1b[36m";
  }
  return "";
}
constexpr char kReset[] = "\x1b[0m";
constexpr char kBold[] = "\x1b[1m";

std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
  return out;
}

std::string Pad(std::string s, size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

std::string Ellipsize(std::string s, size_t width) {
  if (s.size() <= width) return s;
  s.resize(width - 3);
  return s + "...";
}

// Pads first, colours after, so that escapes never count as width.
std::string Tag(Severity s, std::string text, size_t width, const OutputOptions& options) {
  text = Pad(std::move(text), width);
  if (!options.color) return text;
  return SeverityColor(s) + text + kReset;
}

std::string HumanBytes(int64_t bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  size_t unit = 0;
  while (v >= 1024 && unit + 1 < std::size(kUnits)) {
    v /= 1024;
    ++unit;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, unit == 0 ? "%.0f %s" : "%.1f %s", v, kUnits[unit]);
  return buf;
}

std::string Plural(int64_t n, std::string_view one, std::string_view many) {
  return std::to_string(n) + " " + std::string(n == 1 ? one : many);
}

std::string RanksOrNone(const std::vector<int>& ranks) {
  return ranks.empty() ? "none" : FormatRankRanges(ranks);
}

// Appends `text` word-wrapped; continuation lines start with `indent` spaces.
void AppendWrapped(std::string_view text, size_t first_column, size_t indent, std::string* out) {
  size_t column = first_column;
  bool first_word = true;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find(' ', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view word = text.substr(pos, end - pos);
    pos = end + 1;
    if (word.empty()) continue;
    if (!first_word && column + 1 + word.size() > kWrapWidth) {
      out->push_back('\n');
      out->append(indent, ' ');
      column = indent;
    } else if (!first_word) {
      out->push_back(' ');
      ++column;
    }
    out->append(word);
    column += word.size();
    first_word = false;
  }
}

bool IsContainer(const JsonValue& v) { return v.is_object() || v.is_array(); }

bool HoldsContainers(const JsonValue& v) {
  if (v.is_object())
    return std::any_of(v.members().begin(), v.members().end(),
                       [](const auto& m) { return IsContainer(m.second); });
  return std::any_of(v.elements().begin(), v.elements().end(), IsContainer);
}

// Messages (e.g. trace-corrupt examples) read better one per line.
bool IsLongStringList(const JsonValue& v) {
  size_t total = 0;
  for (const auto& e : v.elements()) {
    if (e.kind() != JsonValue::Kind::kString) return false;
    total += e.as_string().size();
  }
  return total > 60;
}

// A scalar, or an array of scalars: fits on one line.
bool IsFlat(const JsonValue& v) { return !v.is_object() && (!v.is_array() || !HoldsContainers(v)); }

bool AllFlat(const JsonValue& object) {
  return std::all_of(object.members().begin(), object.members().end(),
                     [](const auto& m) { return IsFlat(m.second); });
}

// One line for a flat object: "value: 8  ranks: [0,2,3]".
std::string InlineObject(const JsonValue& v) {
  std::string line;
  for (const auto& [key, value] : v.members()) {
    if (!line.empty()) line.append("  ");
    line.append(key + ": " + value.ToDisplay());
  }
  return line;
}

// Evidence as aligned "key  value" lines; nested objects indent, arrays of objects become
// "- " items.
void AppendEvidence(const JsonValue& v, size_t indent, std::string* out) {
  size_t key_width = 0;
  for (const auto& m : v.members()) key_width = std::max(key_width, m.first.size());
  for (const auto& [key, value] : v.members()) {
    out->append(indent, ' ');
    if (value.is_object() && !value.members().empty()) {
      out->append(key + "\n");
      AppendEvidence(value, indent + 2, out);
    } else if (value.is_array() && (HoldsContainers(value) || IsLongStringList(value))) {
      out->append(key + "\n");
      for (const auto& e : value.elements()) {
        out->append(indent + 2, ' ');
        out->append("- " + (e.is_object() && AllFlat(e) ? InlineObject(e) : e.ToDisplay()));
        out->push_back('\n');
      }
    } else {
      out->append(Pad(key, key_width + 2) + value.ToDisplay() + "\n");
    }
  }
}

void AppendHeaderText(const CompareResult& result, const OutputOptions& options, std::string* out) {
  const RunSummary& run = result.run;
  const ReaderStats& st = result.stats;
  const auto counts = CountBySeverity(result.findings);
  auto row = [out](std::string_view label, const std::string& value) {
    out->append("  " + Pad(std::string(label), 15) + value + "\n");
  };
  out->append(options.color ? std::string(kBold) + "dsdiag compare" + kReset : "dsdiag compare");
  out->append("  " + run.dir + "\n");
  row("run id", run.run_id.empty() ? "-" : run.run_id);
  row("world size", std::to_string(run.world_size));
  row("ranks found", RanksOrNone(run.ranks_found) + " (" + std::to_string(run.ranks_found.size()) +
                         " of " + std::to_string(run.world_size) + ")");
  if (!run.ranks_missing.empty()) row("ranks missing", FormatRankRanges(run.ranks_missing));
  if (!run.ranks_excluded.empty()) row("excluded", FormatRankRanges(run.ranks_excluded));
  row("steps", std::to_string(run.steps));
  row("read",
      Plural(st.records, "record", "records") + ", " + HumanBytes(st.bytes) + " in " +
          Plural(st.files, "file", "files") + "; " +
          Plural(st.malformed_lines, "malformed line", "malformed lines") + ", " +
          Plural(st.truncated_tails, "truncated tail", "truncated tails") +
          (st.flight_dumps ? ", " + Plural(st.flight_dumps, "flight dump", "flight dumps") : ""));
  std::string findings = Plural(counts[2], "error", "errors") + ", " +
                         Plural(counts[1], "warning", "warnings") + ", " +
                         std::to_string(counts[0]) + " info";
  if (options.min_severity != Severity::kInfo)
    findings += " (showing " + std::string(SeverityName(options.min_severity)) + " and above)";
  row("findings", findings);
}

struct TableRow {
  std::string index, severity, kind, ranks, step, subject;
  Severity sev;
  std::string summary;
};

void AppendTable(const std::vector<const Finding*>& shown, const OutputOptions& options,
                 std::string* out) {
  std::vector<TableRow> rows;
  for (size_t i = 0; i < shown.size(); ++i) {
    const Finding& f = *shown[i];
    rows.push_back({std::to_string(i + 1), std::string(SeverityName(f.severity)), f.kind,
                    Ellipsize(RanksOrNone(f.ranks), kTableRanksWidth),
                    f.step ? std::to_string(*f.step) : "-",
                    Ellipsize(f.subject.value_or("-"), kTableSubjectWidth), f.severity, f.summary});
  }
  TableRow head{"#", "severity", "kind", "ranks", "step", "subject", Severity::kInfo, "summary"};
  size_t w[6] = {head.index.size(), head.severity.size(), head.kind.size(),
                 head.ranks.size(), head.step.size(),     head.subject.size()};
  for (const auto& r : rows) {
    w[0] = std::max(w[0], r.index.size());
    w[1] = std::max(w[1], r.severity.size());
    w[2] = std::max(w[2], r.kind.size());
    w[3] = std::max(w[3], r.ranks.size());
    w[4] = std::max(w[4], r.step.size());
    w[5] = std::max(w[5], r.subject.size());
  }
  auto line = [&](const TableRow& r, bool is_head) {
    std::string s = "  " + Pad(r.index, w[0] + 2);
    s += is_head ? Pad(r.severity, w[1] + 2) : Tag(r.sev, r.severity, w[1] + 2, options);
    s += Pad(r.kind, w[2] + 2) + Pad(r.ranks, w[3] + 2) + Pad(r.step, w[4] + 2) +
         Pad(r.subject, w[5] + 2) + r.summary;
    out->append(s + "\n");
  };
  line(head, true);
  for (const auto& r : rows) line(r, false);
}

void AppendDetail(size_t index, const Finding& f, const OutputOptions& options, std::string* out) {
  const std::string severity = Upper(SeverityName(f.severity));
  out->append("[" + std::to_string(index) + "] " + Tag(f.severity, severity, 0, options) + "  " +
              f.kind + (f.ranks.size() == 1 ? "  rank " : "  ranks ") + RanksOrNone(f.ranks) +
              "  step " + (f.step ? std::to_string(*f.step) : "-") + "\n");
  out->append("    ");
  AppendWrapped(f.summary, 4, 4, out);
  out->push_back('\n');
  if (f.subject) out->append("    subject   " + *f.subject + "\n");
  if (f.evidence.is_object() && !f.evidence.members().empty()) {
    out->append("    evidence\n");
    AppendEvidence(f.evidence, 6, out);
  }
  if (!f.hint.empty()) {
    out->append("    hint      ");
    AppendWrapped(f.hint, 14, 14, out);
    out->push_back('\n');
  }
}

}  // namespace

std::string FindingsToJson(const CompareResult& result, const OutputOptions& options) {
  std::string out = "{\"schema\":\"";
  out.append(kFindingsSchema);
  out.append("\",\n \"run\":");
  AppendRunJson(result, &out);
  const auto counts = CountBySeverity(result.findings);
  out.append(",\n \"counts\":{\"error\":" + std::to_string(counts[2]) + ",\"warning\":" +
             std::to_string(counts[1]) + ",\"info\":" + std::to_string(counts[0]) + "}");
  out.append(",\n \"findings\":[");
  bool first = true;
  for (const auto& f : result.findings) {
    if (!Shown(f, options)) continue;
    out.append(first ? "\n  " : ",\n  ");
    AppendFindingJson(f, &out);
    first = false;
  }
  out.append(first ? "]}\n" : "\n ]}\n");
  return out;
}

std::string FindingsToText(const CompareResult& result, const OutputOptions& options) {
  std::string out;
  AppendHeaderText(result, options, &out);
  std::vector<const Finding*> shown;
  for (const auto& f : result.findings)
    if (Shown(f, options)) shown.push_back(&f);
  out.push_back('\n');
  if (shown.empty()) {
    out.append(result.findings.empty()
                   ? "  no findings: nothing the analyzers check differs between ranks\n"
                   : "  no findings at or above " +
                         std::string(SeverityName(options.min_severity)) + "\n");
    return out;
  }
  AppendTable(shown, options, &out);
  for (size_t i = 0; i < shown.size(); ++i) {
    out.push_back('\n');
    AppendDetail(i + 1, *shown[i], options, &out);
  }
  return out;
}

}  // namespace dsdiag::analyzers
