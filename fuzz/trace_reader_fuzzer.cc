// Fuzzes TraceReader with one rank file: header, records and every kind of bad line.
//
// Beyond "no crash, no sanitizer report", it checks the reader's promise that bad input
// becomes a clear error: every line that is not a record is accounted for by exactly one
// LocatedIssue, and every issue names the file, a line that exists and a column, says what was
// expected and shows what was found. A rejected line is located by trace/json_syntax, never
// left to simdjson's bare "valid JSON". Values and headers it accepts must also survive a
// round trip through the writer's JSON.
#include <simdjson.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/fuzz_check.h"
#include "trace/header_parser.h"
#include "trace/record_types.h"
#include "trace/trace_header.h"
#include "trace/trace_reader.h"

namespace {

using dsdiag::trace::JsonValue;
using dsdiag::trace::LocatedIssue;
using dsdiag::trace::Record;
using dsdiag::trace::TraceReader;
namespace dom = simdjson::dom;

// One in-memory file, rewritten for each input: the reader wants a path, and a memfd's
// /proc path spares the disk.
const std::string& InputPath() {
  static const std::string path = [] {
    const int fd = memfd_create("rank-00000.jsonl", MFD_CLOEXEC);
    FUZZ_CHECK(fd >= 0, "memfd_create failed");
    return "/proc/self/fd/" + std::to_string(fd);
  }();
  return path;
}

void WriteInput(const uint8_t* data, size_t size) {
  const int fd = std::stoi(InputPath().substr(sizeof("/proc/self/fd/") - 1));
  FUZZ_CHECK(ftruncate(fd, 0) == 0, "ftruncate failed");
  size_t done = 0;
  while (done < size) {
    const ssize_t n = pwrite(fd, data + done, size - done, static_cast<off_t>(done));
    FUZZ_CHECK(n > 0, "pwrite failed");
    done += static_cast<size_t>(n);
  }
}

// What the writer makes of a value must read back as the same value.
void CheckRoundTrip(dom::parser& parser, const JsonValue& value) {
  const std::string json = value.ToJson();
  dom::element reparsed;
  FUZZ_CHECK(!parser.parse(json).get(reparsed), "the writer's JSON does not parse: %s",
             json.c_str());
  FUZZ_CHECK(dsdiag::trace::ToJsonValue(reparsed) == value, "round trip changed %s", json.c_str());
}

void CheckRecord(const Record& r, int64_t previous_line, dom::parser& parser) {
  FUZZ_CHECK(r.line() > previous_line && r.line() >= 2, "record line %lld after %lld",
             static_cast<long long>(r.line()), static_cast<long long>(previous_line));
  FUZZ_CHECK(r.type() != dsdiag::trace::rec::kHeader, "a header returned as an event");
  FUZZ_CHECK(!r.raw_line().empty() && r.raw_line().find('\n') == std::string_view::npos,
             "raw line is not one line");
  FUZZ_CHECK(r.tid() >= 0, "negative tid");
  // The typed accessors must be safe on any field, of any type or absent.
  for (const std::string_view key : {"type", "ts", "step", "name", "ms", "hash", "missing"}) {
    (void)r.Int(key);
    (void)r.Double(key);
    (void)r.Bool(key);
    (void)r.Str(key);
    (void)r.Hex(key);
    FUZZ_CHECK(r.Has(key) == r.Value(key).has_value(), "Has and Value disagree");
  }
  for (dom::key_value_pair kv : r.object()) {
    const std::optional<JsonValue> v = r.Value(kv.key);
    FUZZ_CHECK(v.has_value(), "Value() lost a member");
    CheckRoundTrip(parser, *v);
  }
}

void CheckIssue(const LocatedIssue& issue, const std::string& path, int64_t lines) {
  FUZZ_CHECK(issue.file == path, "issue names another file");
  // An empty file has its issue on line 1; otherwise the line must exist.
  FUZZ_CHECK(issue.line >= 1 && issue.line <= (lines > 0 ? lines : 1), "issue line %lld of %lld",
             static_cast<long long>(issue.line), static_cast<long long>(lines));
  FUZZ_CHECK(issue.column >= 1, "issue column %lld", static_cast<long long>(issue.column));
  FUZZ_CHECK(!issue.expected.empty() && !issue.found.empty(), "issue without text");
  FUZZ_CHECK(issue.expected != "valid JSON",
             "json_syntax accepted a line simdjson rejects (found: %s)", issue.found.c_str());
  const std::string where =
      path + ":" + std::to_string(issue.line) + ":" + std::to_string(issue.column) + ": expected ";
  FUZZ_CHECK(issue.ToString().rfind(where, 0) == 0, "issue text: %s", issue.ToString().c_str());
}

// The header the reader accepted, written back by the writer, must read back alike.
void CheckHeaderRoundTrip(const dsdiag::trace::TraceHeader& header, dom::parser& parser) {
  std::string line;
  dsdiag::trace::AppendHeaderRecord(header, 0, &line);
  while (!line.empty() && line.back() == '\n') line.pop_back();
  dom::element element;
  FUZZ_CHECK(!parser.parse(line).get(element), "written header does not parse: %s", line.c_str());
  dom::object object;
  FUZZ_CHECK(!element.get_object().get(object), "written header is not an object");
  dsdiag::trace::TraceHeader again;
  const auto problem = dsdiag::trace::ParseHeaderObject(object, line, &again);
  FUZZ_CHECK(!problem, "written header rejected: expected %s: %s",
             problem ? problem->expected.c_str() : "", line.c_str());
  FUZZ_CHECK(again.run_id == header.run_id && again.rank == header.rank &&
                 again.world_size == header.world_size && again.config == header.config &&
                 again.sections == header.sections,
             "header changed in a round trip: %s", line.c_str());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  WriteInput(data, size);
  const std::string& path = InputPath();
  std::string error;
  std::unique_ptr<TraceReader> reader = TraceReader::Open(path, &error);
  FUZZ_CHECK(reader != nullptr, "Open failed: %s", error.c_str());

  static dom::parser parser;
  const bool has_header = reader->ReadHeader().has_value();
  if (has_header) CheckHeaderRoundTrip(*reader->header(), parser);
  int64_t records = 0;
  int64_t previous_line = 1;
  Record r;
  while (reader->Next(&r)) {
    CheckRecord(r, previous_line, parser);
    previous_line = r.line();
    ++records;
  }
  FUZZ_CHECK(!reader->Next(&r), "Next() after the end returned a record");

  const int64_t lines = reader->lines_read();
  FUZZ_CHECK(reader->bytes_read() == static_cast<int64_t>(size), "read %lld of %zu bytes",
             static_cast<long long>(reader->bytes_read()), size);
  FUZZ_CHECK(reader->saw_truncated_tail() == (size > 0 && data[size - 1] != '\n'),
             "truncated tail misreported");
  // Each line is the header, a record or exactly one issue (an empty file: one issue).
  FUZZ_CHECK(records + reader->issue_count() + (has_header ? 1 : 0) == (lines > 0 ? lines : 1),
             "%lld lines but %lld records, %lld issues, header %d", static_cast<long long>(lines),
             static_cast<long long>(records), static_cast<long long>(reader->issue_count()),
             has_header);
  const size_t kept = static_cast<size_t>(TraceReader::kMaxIssuesKept);
  FUZZ_CHECK(reader->issues().size() == std::min(kept, static_cast<size_t>(reader->issue_count())),
             "issues kept");
  for (const LocatedIssue& issue : reader->issues()) CheckIssue(issue, path, lines);
  return 0;
}
