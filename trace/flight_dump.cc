#include "trace/flight_dump.h"

#include <simdjson.h>

#include <cstdint>
#include <filesystem>
#include <fstream>

#include "trace/flight_dump_keys.h"
#include "trace/json_line.h"
#include "trace/json_syntax.h"

namespace dsdiag::trace {
namespace {

namespace dom = simdjson::dom;
using DK = FlightDumpKeys;
using WK = FlightWhereKeys;
using EK = FlightEntryKeys;
using SK = FlightSiteKeys;
using TK = FlightStackKeys;

constexpr std::string_view kSchemaPrefix = "dsdiag.flight/";
constexpr std::string_view kSchemaMajor = "1";
static_assert(kFlightDumpSchema.substr(0, kSchemaPrefix.size()) == kSchemaPrefix);
// Dumps hold at most a few hundred entries (~100 KB); anything far larger is not a dump.
constexpr uintmax_t kMaxDumpBytes = uintmax_t{64} << 20;

// What a reader expected of a member: `integer field "pg"`.
std::string FieldOfType(std::string_view type, FieldKey key) {
  std::string out(type);
  if (!out.empty()) out += ' ';
  return out.append("field \"").append(key.name()).append("\"");
}

// ---- writing ----

void AppendEntry(JsonLine* l, const FlightDumpEntry& e) {
  l->BeginObject()
      .Field(EK::pg.name(), e.pg)
      .Field(EK::seq.name(), e.seq)
      .Field(EK::op.name(), e.what.op);
  if (e.peer) l->Field(EK::peer.name(), *e.peer);
  if (e.group_peer && e.group_peer != e.peer) l->Field(EK::group_peer.name(), *e.group_peer);
  if (e.match_tag != 0) l->Field(EK::match_tag.name(), e.match_tag);
  l->Field(EK::dtype.name(), e.what.dtype);
  if (e.what.count >= 0) l->Field(EK::n.name(), e.what.count);
  if (e.what.bytes >= 0) l->Field(EK::bytes.name(), e.what.bytes);
  l->Field(EK::tag.name(), e.what.tag);
  if (e.what.site != 0) l->Field(EK::site.name(), e.what.site);
  if (e.step) l->Field(EK::step.name(), *e.step);
  l->Field(EK::phase.name(), e.phase).Field(EK::state.name(), CollectiveStateName(e.state));
  if (e.issued) l->Field(EK::issued.name(), *e.issued);
  if (e.started) l->Field(EK::started.name(), *e.started);
  if (e.completed) l->Field(EK::completed.name(), *e.completed);
  if (e.counts.consistent()) {
    auto ints = [l](std::string_view key, const std::vector<int64_t>& values) {
      l->BeginArray(key);
      for (int64_t v : values) l->Add(v);
      l->EndArray();
    };
    ints(EK::send.name(), e.counts.send);
    ints(EK::recv.name(), e.counts.recv);
    if (!e.counts.peers.empty()) ints(EK::peers.name(), e.counts.peers);
  }
  l->EndObject();
}

// ---- reading ----

// Turns the first problem met into a LocatedIssue located in the text.
class Checker {
 public:
  Checker(const std::string& text, const std::string& path, LocatedIssue* issue)
      : text_(text), path_(path), issue_(issue) {}

  bool FailAt(size_t offset, std::string expected, std::string found) {
    if (issue_) *issue_ = IssueAt(path_, text_, offset, std::move(expected), std::move(found));
    return false;
  }

  // A problem with top-level member `key` (or with the object itself when it is absent).
  bool FailField(std::string_view key, std::string expected) {
    const auto span = FindTopLevelValue(text_, key);
    if (!span) return FailAt(ObjectStart(), std::move(expected), "no \"" + std::string(key) + "\"");
    return FailAt(span->offset, std::move(expected), DescribeValue(text_, *span));
  }

 private:
  size_t ObjectStart() const {
    const size_t p = text_.find('{');
    return p == std::string::npos ? 0 : p;
  }

  const std::string& text_;
  const std::string& path_;
  LocatedIssue* issue_;
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

// An optional array of integers: absent is fine (true, *out empty), anything else is not.
bool OptInts(const dom::object& o, std::string_view key, std::vector<int64_t>* out) {
  out->clear();
  dom::element e;
  if (o.at_key(key).get(e) != simdjson::SUCCESS) return true;
  dom::array a;
  if (e.get_array().get(a) != simdjson::SUCCESS) return false;
  for (dom::element v : a) {
    int64_t i = 0;
    if (v.get_int64().get(i) != simdjson::SUCCESS) return false;
    out->push_back(i);
  }
  return true;
}

// The per-peer sizes of an entry (trace/peer_counts.h): none, or send and recv of one length.
bool ParseCounts(const dom::object& o, PeerCounts* counts, std::string* problem) {
  if (!OptInts(o, EK::send.name(), &counts->send) || !OptInts(o, EK::recv.name(), &counts->recv) ||
      !OptInts(o, EK::peers.name(), &counts->peers)) {
    *problem = "\"send\", \"recv\" and \"peers\" as arrays of integers";
    return false;
  }
  if (!counts->empty() && !counts->consistent()) {
    *problem = "\"send\" and \"recv\" with one count per peer";
    return false;
  }
  return true;
}

std::optional<CollectiveState> ParseState(std::string_view s) {
  for (CollectiveState state :
       {CollectiveState::kIssued, CollectiveState::kStarted, CollectiveState::kCompleted})
    if (s == CollectiveStateName(state)) return state;
  return std::nullopt;
}

// One entry, or the reason it cannot be used.
std::optional<FlightDumpEntry> ParseEntry(dom::element element, std::string* problem) {
  dom::object o;
  if (element.get_object().get(o)) {
    *problem = "an object";
    return std::nullopt;
  }
  FlightDumpEntry e;
  int64_t pg = 0;
  if (!GetInt(o, EK::pg.name(), &pg) || pg < 0 || pg > INT32_MAX) {
    *problem = FieldOfType("integer", EK::pg);
    return std::nullopt;
  }
  e.pg = static_cast<int>(pg);
  if (!GetInt(o, EK::seq.name(), &e.seq)) {
    *problem = FieldOfType("integer", EK::seq);
    return std::nullopt;
  }
  const auto state = ParseState(OptStr(o, EK::state.name()));
  if (!state) {
    *problem = FieldOfType("", EK::state) + ": \"issued\", \"started\" or \"completed\"";
    return std::nullopt;
  }
  e.state = *state;
  e.what.op = OptStr(o, EK::op.name());
  e.what.dtype = OptStr(o, EK::dtype.name());
  e.what.count = OptInt(o, EK::n.name()).value_or(-1);
  e.what.bytes = OptInt(o, EK::bytes.name()).value_or(-1);
  e.what.tag = OptStr(o, EK::tag.name());
  e.what.site = OptInt(o, EK::site.name()).value_or(0);
  e.step = OptInt(o, EK::step.name());
  e.phase = OptStr(o, EK::phase.name());
  e.issued = OptInt(o, EK::issued.name());
  e.started = OptInt(o, EK::started.name());
  e.completed = OptInt(o, EK::completed.name());
  if (!ParseCounts(o, &e.counts, problem)) return std::nullopt;
  return e;
}

// A point-to-point entry: an entry's fields, and the peer it went to or came from.
std::optional<FlightDumpEntry> ParseP2PEntry(dom::element element, std::string* problem) {
  auto e = ParseEntry(element, problem);
  if (!e) return std::nullopt;
  dom::object o;
  if (element.get_object().get(o) != simdjson::SUCCESS) return std::nullopt;  // ParseEntry saw one
  e->peer = OptInt(o, EK::peer.name());
  if (!e->peer || *e->peer < -1) {
    *problem = FieldOfType("integer", EK::peer) + " (-1: any source)";
    return std::nullopt;
  }
  e->group_peer = OptInt(o, EK::group_peer.name());
  if (!e->group_peer) e->group_peer = e->peer;
  e->match_tag = OptInt(o, EK::match_tag.name()).value_or(0);
  return e;
}

// The entries of list `key`, each parsed by `parse`; a bad one is skipped and counted.
template <typename Parse>
void ParseEntries(dom::array array, std::string_view key, Parse parse,
                  std::vector<FlightDumpEntry>* out, FlightDump* d) {
  size_t index = 0;
  for (dom::element element : array) {
    std::string problem;
    if (auto entry = parse(element, &problem)) {
      out->push_back(std::move(*entry));
    } else if (d->entries_skipped++ == 0) {
      d->first_entry_problem =
          std::string(key) + "[" + std::to_string(index) + "]: expected " + problem;
    }
    ++index;
  }
}

std::optional<ClockReference> ParseClock(const dom::object& o) {
  dom::element e;
  dom::object c;
  if (o.at_key(DK::clock.name()).get(e) || e.get_object().get(c)) return std::nullopt;
  return ParseClockObject(c, /*require_pair=*/true);
}

}  // namespace

const CallSite* FlightDump::Site(int64_t id) const {
  for (const CallSite& s : sites)
    if (s.id == id && id != 0) return &s;
  return nullptr;
}

const FlightDumpEntry* FlightDump::OldestPending() const {
  for (const FlightDumpEntry& e : entries)
    if (e.pending()) return &e;
  return nullptr;
}

std::string FlightDumpJson(const FlightDump& d) {
  std::string out;
  JsonLine l(&out);
  l.Field(DK::schema.name(), kFlightDumpSchema)
      .Field(DK::run_id.name(), d.run_id)
      .Field(DK::rank.name(), d.rank)
      .Field(DK::world_size.name(), d.world_size)
      .Field(DK::reason.name(), d.reason)
      .Field(DK::ts.name(), d.ts);
  if (d.clock) AppendClockObject(&l, DK::clock.name(), *d.clock);
  if (d.where_step) {
    l.BeginObject(DK::where.name())
        .Field(WK::step.name(), *d.where_step)
        .Field(WK::phase.name(), d.where_phase)
        .EndObject();
  }
  l.BeginArray(DK::entries.name());
  for (const FlightDumpEntry& e : d.entries) AppendEntry(&l, e);
  l.EndArray();
  if (!d.p2p.empty()) {
    l.BeginArray(DK::p2p.name());
    for (const FlightDumpEntry& e : d.p2p) AppendEntry(&l, e);
    l.EndArray();
  }
  if (!d.sites.empty()) {
    l.BeginArray(DK::sites.name());
    for (const CallSite& s : d.sites) {
      l.BeginObject()
          .Field(SK::id.name(), s.id)
          .Field(SK::file.name(), s.file)
          .Field(SK::line.name(), s.line)
          .Field(SK::fn.name(), s.fn)
          .EndObject();
    }
    l.EndArray();
  }
  if (!d.stacks.empty()) {
    l.BeginArray(DK::stacks.name());
    for (const ThreadStack& t : d.stacks) {
      l.BeginObject().Field(TK::thread.name(), t.thread).BeginArray(TK::frames.name());
      for (const std::string& frame : t.frames) l.Add(frame);
      l.EndArray().EndObject();
    }
    l.EndArray();
  }
  l.Finish();
  return out;
}

namespace {

// `sites`, when present: a site without an integer id is left out.
std::vector<CallSite> ParseSites(const dom::object& o) {
  std::vector<CallSite> sites;
  dom::array array;
  if (o.at_key(DK::sites.name()).get_array().get(array) != simdjson::SUCCESS) return sites;
  for (dom::element element : array) {
    dom::object s;
    CallSite site;
    if (element.get_object().get(s) != simdjson::SUCCESS || !GetInt(s, SK::id.name(), &site.id))
      continue;
    site.file = OptStr(s, SK::file.name());
    site.line = OptInt(s, SK::line.name()).value_or(0);
    site.fn = OptStr(s, SK::fn.name());
    sites.push_back(std::move(site));
  }
  return sites;
}

// `stacks`, when present: threads without a string name or frames that are not strings are
// left out (a dump is read for what it can tell).
std::vector<ThreadStack> ParseStacks(const dom::object& o) {
  std::vector<ThreadStack> stacks;
  dom::array array;
  if (o.at_key(DK::stacks.name()).get_array().get(array) != simdjson::SUCCESS) return stacks;
  for (dom::element element : array) {
    dom::object thread;
    if (element.get_object().get(thread) != simdjson::SUCCESS) continue;
    ThreadStack t;
    std::string_view name;
    if (thread.at_key(TK::thread.name()).get_string().get(name) != simdjson::SUCCESS) continue;
    t.thread = std::string(name);
    dom::array frames;
    if (thread.at_key(TK::frames.name()).get_array().get(frames) == simdjson::SUCCESS) {
      for (dom::element frame : frames) {
        std::string_view text;
        if (frame.get_string().get(text) == simdjson::SUCCESS) t.frames.emplace_back(text);
      }
    }
    stacks.push_back(std::move(t));
  }
  return stacks;
}

}  // namespace

std::optional<FlightDump> ParseFlightDump(const std::string& text, const std::string& path,
                                          LocatedIssue* issue) {
  Checker check(text, path, issue);
  if (auto syntax = CheckJsonObjectLine(text)) {
    check.FailAt(syntax->offset, syntax->expected, DescribeBytesAt(text, syntax->offset));
    return std::nullopt;
  }
  dom::parser parser;
  dom::element doc;
  dom::object o;
  if (parser.parse(simdjson::padded_string(text)).get(doc) || doc.get_object().get(o)) {
    check.FailAt(0, "a JSON object", DescribeBytesAt(text, 0));
    return std::nullopt;
  }

  FlightDump d;
  const std::string schema = OptStr(o, DK::schema.name());
  if (schema.compare(0, kSchemaPrefix.size(), kSchemaPrefix) != 0) {
    check.FailField(DK::schema.name(), "\"schema\": \"" + std::string(kFlightDumpSchema) + "\"");
    return std::nullopt;
  }
  if (std::string_view(schema).substr(kSchemaPrefix.size()) != kSchemaMajor) {
    check.FailField(DK::schema.name(),
                    "flight dump schema major 1 (\"" + std::string(kFlightDumpSchema) + "\")");
    return std::nullopt;
  }
  int64_t rank = 0;
  if (!GetInt(o, DK::rank.name(), &rank) || rank < 0 || rank > INT32_MAX) {
    check.FailField(DK::rank.name(), FieldOfType("integer", DK::rank) + " >= 0");
    return std::nullopt;
  }
  d.rank = static_cast<int>(rank);
  if (!GetInt(o, DK::ts.name(), &d.ts)) {
    check.FailField(DK::ts.name(), FieldOfType("integer", DK::ts));
    return std::nullopt;
  }
  dom::element entries;
  dom::array array;
  if (o.at_key(DK::entries.name()).get(entries) || entries.get_array().get(array)) {
    check.FailField(DK::entries.name(), FieldOfType("array", DK::entries));
    return std::nullopt;
  }
  d.run_id = OptStr(o, DK::run_id.name());
  d.world_size = static_cast<int>(OptInt(o, DK::world_size.name()).value_or(0));
  d.reason = OptStr(o, DK::reason.name());
  d.clock = ParseClock(o);
  dom::element where_e;
  dom::object where;
  if (o.at_key(DK::where.name()).get(where_e) == simdjson::SUCCESS &&
      where_e.get_object().get(where) == simdjson::SUCCESS) {
    d.where_step = OptInt(where, WK::step.name());
    d.where_phase = OptStr(where, WK::phase.name());
  }
  ParseEntries(array, DK::entries.name(), ParseEntry, &d.entries, &d);
  dom::array p2p;
  if (o.at_key(DK::p2p.name()).get_array().get(p2p) == simdjson::SUCCESS)
    ParseEntries(p2p, DK::p2p.name(), ParseP2PEntry, &d.p2p, &d);
  d.sites = ParseSites(o);
  d.stacks = ParseStacks(o);
  return d;
}

std::optional<FlightDump> ReadFlightDumpFile(const std::string& path, LocatedIssue* issue) {
  std::error_code ec;
  const uintmax_t size = std::filesystem::file_size(path, ec);
  if (!ec && size > kMaxDumpBytes) {
    if (issue) *issue = {path, 0, 0, "a flight dump of at most 64 MiB", "a larger file", false};
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
      *issue = {path,
                0,
                0,
                "a readable flight dump",
                "a file that cannot be read" + (ec ? " (" + ec.message() + ")" : std::string()),
                false};
    }
    return std::nullopt;
  }
  return ParseFlightDump(text, path, issue);
}

}  // namespace dsdiag::trace
