#include "analyzers/flight_dump.h"

#include <simdjson.h>

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "trace/json_syntax.h"

namespace dsdiag::analyzers {
namespace {

namespace dom = simdjson::dom;

constexpr std::string_view kSchemaPrefix = "dsdiag.flight/";
constexpr std::string_view kSchemaMajor = "1";
// Dumps hold at most a few hundred entries (~100 KB); anything far larger is not a dump.
constexpr uintmax_t kMaxDumpBytes = uintmax_t{64} << 20;

// Turns the first problem met into a FlightDumpIssue located in the text.
class Checker {
 public:
  Checker(const std::string& text, const std::string& path, FlightDumpIssue* issue)
      : text_(text), path_(path), issue_(issue) {}

  bool FailAt(size_t offset, std::string expected, std::string found) {
    if (!issue_) return false;
    issue_->file = path_;
    issue_->line = 1;
    issue_->column = 1;
    for (size_t i = 0; i < offset && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++issue_->line;
        issue_->column = 1;
      } else {
        ++issue_->column;
      }
    }
    issue_->expected = std::move(expected);
    issue_->found = std::move(found);
    return false;
  }

  // A problem with top-level member `key` (or with the object itself when it is absent).
  bool FailField(std::string_view key, std::string expected) {
    const auto span = trace::FindTopLevelValue(text_, key);
    if (!span) return FailAt(ObjectStart(), std::move(expected), "no \"" + std::string(key) + "\"");
    return FailAt(span->offset, std::move(expected), trace::DescribeValue(text_, *span));
  }

  size_t ObjectStart() const {
    const size_t p = text_.find('{');
    return p == std::string::npos ? 0 : p;
  }

 private:
  const std::string& text_;
  const std::string& path_;
  FlightDumpIssue* issue_;
};

bool GetInt(const dom::object& o, std::string_view key, int64_t* out) {
  dom::element e;
  return o.at_key(key).get(e) == simdjson::SUCCESS && e.get_int64().get(*out) == simdjson::SUCCESS;
}

std::optional<int64_t> OptInt(const dom::object& o, std::string_view key) {
  int64_t v = 0;
  if (GetInt(o, key, &v)) return v;
  return std::nullopt;
}

std::string OptStr(const dom::object& o, std::string_view key) {
  dom::element e;
  std::string_view v;
  if (o.at_key(key).get(e) == simdjson::SUCCESS && e.get_string().get(v) == simdjson::SUCCESS)
    return std::string(v);
  return {};
}

std::optional<FlightEntry::State> ParseState(std::string_view s) {
  if (s == "issued") return FlightEntry::State::kIssued;
  if (s == "started") return FlightEntry::State::kStarted;
  if (s == "completed") return FlightEntry::State::kCompleted;
  return std::nullopt;
}

// One entry, or the reason it cannot be used.
std::optional<FlightEntry> ParseEntry(dom::element element, std::string* problem) {
  dom::object o;
  if (element.get_object().get(o)) {
    *problem = "an object";
    return std::nullopt;
  }
  FlightEntry e;
  int64_t pg = 0;
  if (!GetInt(o, "pg", &pg) || pg < 0 || pg > INT32_MAX) {
    *problem = "integer field \"pg\"";
    return std::nullopt;
  }
  e.pg = static_cast<int>(pg);
  if (!GetInt(o, "seq", &e.seq)) {
    *problem = "integer field \"seq\"";
    return std::nullopt;
  }
  const auto state = ParseState(OptStr(o, "state"));
  if (!state) {
    *problem = "field \"state\": \"issued\", \"started\" or \"completed\"";
    return std::nullopt;
  }
  e.state = *state;
  e.op = OptStr(o, "op");
  e.dtype = OptStr(o, "dtype");
  e.n = OptInt(o, "n");
  e.tag = OptStr(o, "tag");
  e.step = OptInt(o, "step");
  e.phase = OptStr(o, "phase");
  e.issued = OptInt(o, "issued");
  e.started = OptInt(o, "started");
  e.completed = OptInt(o, "completed");
  return e;
}

std::optional<trace::ClockReference> ParseClock(const dom::object& o) {
  dom::element e;
  dom::object c;
  if (o.at_key("clock").get(e) || e.get_object().get(c)) return std::nullopt;
  trace::ClockReference clock;
  if (!GetInt(c, "mono", &clock.mono_ns) || !GetInt(c, "wall", &clock.wall_ns)) return std::nullopt;
  clock.offset_ns = OptInt(c, "offset").value_or(0);
  clock.offset_err_ns = OptInt(c, "offset_err").value_or(-1);
  return clock;
}

}  // namespace

const FlightEntry* FlightDumpData::OldestPending() const {
  for (const FlightEntry& e : entries)
    if (e.pending()) return &e;
  return nullptr;
}

std::string FlightDumpIssue::ToString() const {
  std::string s = file;
  if (line > 0) s += ":" + std::to_string(line) + ":" + std::to_string(column);
  return s + ": expected " + expected + ", found " + found;
}

std::optional<FlightDumpData> ParseFlightDump(const std::string& text, const std::string& path,
                                              const std::string& file_name,
                                              FlightDumpIssue* issue) {
  Checker check(text, path, issue);
  if (auto syntax = trace::CheckJsonObjectLine(text)) {
    check.FailAt(syntax->offset, syntax->expected, trace::DescribeBytesAt(text, syntax->offset));
    return std::nullopt;
  }
  dom::parser parser;
  dom::element doc;
  dom::object o;
  if (parser.parse(simdjson::padded_string(text)).get(doc) || doc.get_object().get(o)) {
    check.FailAt(0, "a JSON object", trace::DescribeBytesAt(text, 0));
    return std::nullopt;
  }

  FlightDumpData d;
  d.file_name = file_name;
  const std::string schema = OptStr(o, "schema");
  if (schema.compare(0, kSchemaPrefix.size(), kSchemaPrefix) != 0) {
    check.FailField("schema", "\"schema\": \"dsdiag.flight/1\"");
    return std::nullopt;
  }
  if (std::string_view(schema).substr(kSchemaPrefix.size()) != kSchemaMajor) {
    check.FailField("schema", "flight dump schema major 1 (\"dsdiag.flight/1\")");
    return std::nullopt;
  }
  int64_t rank = 0;
  if (!GetInt(o, "rank", &rank) || rank < 0 || rank > INT32_MAX) {
    check.FailField("rank", "integer field \"rank\" >= 0");
    return std::nullopt;
  }
  d.rank = static_cast<int>(rank);
  if (!GetInt(o, "ts", &d.ts)) {
    check.FailField("ts", "integer field \"ts\"");
    return std::nullopt;
  }
  dom::element entries;
  dom::array array;
  if (o.at_key("entries").get(entries) || entries.get_array().get(array)) {
    check.FailField("entries", "array field \"entries\"");
    return std::nullopt;
  }
  d.run_id = OptStr(o, "run_id");
  d.world_size = static_cast<int>(OptInt(o, "world_size").value_or(0));
  d.reason = OptStr(o, "reason");
  d.clock = ParseClock(o);
  dom::element where_e;
  dom::object where;
  if (o.at_key("where").get(where_e) == simdjson::SUCCESS &&
      where_e.get_object().get(where) == simdjson::SUCCESS) {
    d.where_step = OptInt(where, "step");
    d.where_phase = OptStr(where, "phase");
  }
  size_t index = 0;
  for (dom::element element : array) {
    std::string problem;
    if (auto entry = ParseEntry(element, &problem)) {
      d.entries.push_back(std::move(*entry));
    } else {
      if (d.entries_skipped++ == 0)
        d.first_entry_problem = "entries[" + std::to_string(index) + "]: expected " + problem;
    }
    ++index;
  }
  return d;
}

std::optional<FlightDumpData> ReadFlightDump(const std::string& path, const std::string& file_name,
                                             FlightDumpIssue* issue) {
  std::error_code ec;
  const uintmax_t size = std::filesystem::file_size(path, ec);
  if (!ec && size > kMaxDumpBytes) {
    if (issue) *issue = {path, 0, 0, "a flight dump of at most 64 MiB", "a larger file"};
    return std::nullopt;
  }
  std::ifstream in(path, std::ios::binary);
  std::string text;
  if (in && !ec) {
    text.resize(static_cast<size_t>(size));
    in.read(text.data(), static_cast<std::streamsize>(size));
    text.resize(static_cast<size_t>(in.gcount()));
  }
  if (!in || ec) {
    if (issue) {
      *issue = {path, 0, 0, "a readable flight dump",
                "a file that cannot be read" + (ec ? " (" + ec.message() + ")" : std::string())};
    }
    return std::nullopt;
  }
  return ParseFlightDump(text, path, file_name, issue);
}

std::optional<NamedCollective> ParseNamedCollective(std::string_view text) {
  for (size_t at = text.find("pg "); at != std::string_view::npos; at = text.find("pg ", at + 1)) {
    if (at > 0 && std::isalnum(static_cast<unsigned char>(text[at - 1]))) continue;
    int pg = 0;
    long long seq = 0;
    int used = 0;
    const std::string rest(text.substr(at, 64));
    if (std::sscanf(rest.c_str(), "pg %d seq %lld%n", &pg, &seq, &used) != 2 || used <= 0 || pg < 0)
      continue;
    NamedCollective named{pg, static_cast<int64_t>(seq), {}, {}};
    const std::string_view after = text.substr(at + static_cast<size_t>(used));
    const size_t close = after.find(')');
    if (after.size() > 2 && after.substr(0, 2) == " (" && close != std::string_view::npos) {
      const std::string_view inside = after.substr(2, close - 2);
      const size_t comma = inside.find(", ");
      if (comma != std::string_view::npos) {
        named.op = std::string(inside.substr(0, comma));
        named.tag = std::string(inside.substr(comma + 2));
      } else {
        named.tag = std::string(inside);
      }
    }
    return named;
  }
  return std::nullopt;
}

}  // namespace dsdiag::analyzers
