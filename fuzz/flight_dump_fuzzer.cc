// Fuzzes the reader of dsdiag's own flight dumps (flight-rank-<R>.json, trace/flight_dump.h)
// with one file's bytes.
//
// Beyond "no crash, no sanitizer report", it checks the reader's promises: a rejected file
// yields one issue that names the file and says what was expected and what was found; an
// accepted dump keeps its skip count and its first problem together, and what the writer makes
// of it reads back as the same dump (written again, the same bytes): a dump the run loader
// accepts is one the probes could have written.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_check.h"
#include "trace/flight_dump.h"

namespace {

using dsdiag::trace::FlightDump;
using dsdiag::trace::LocatedIssue;

constexpr char kPath[] = "run/flight-rank-00003.json";

void CheckIssue(const LocatedIssue& issue) {
  FUZZ_CHECK(issue.file == kPath, "issue names another file: %s", issue.file.c_str());
  FUZZ_CHECK(!issue.expected.empty() && !issue.found.empty(), "issue without text");
}

void CheckDump(const FlightDump& dump) {
  FUZZ_CHECK(dump.entries_skipped >= 0, "negative skip count");
  FUZZ_CHECK((dump.entries_skipped == 0) == dump.first_entry_problem.empty(),
             "skip count and first problem disagree");
  (void)dump.OldestPending();
  const std::string written = dsdiag::trace::FlightDumpJson(dump);
  LocatedIssue issue;
  const auto again = dsdiag::trace::ParseFlightDump(written, kPath, &issue);
  FUZZ_CHECK(again.has_value(), "the writer's dump is refused: %s (%s)", issue.found.c_str(),
             written.substr(0, 200).c_str());
  FUZZ_CHECK(again->entries_skipped == 0, "the writer's dump has a bad entry: %s",
             again->first_entry_problem.c_str());
  FUZZ_CHECK(again->entries.size() == dump.entries.size() && again->p2p.size() == dump.p2p.size(),
             "entries lost in a round trip");
  FUZZ_CHECK(dsdiag::trace::FlightDumpJson(*again) == written, "round trip changed %s",
             written.substr(0, 200).c_str());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  LocatedIssue issue;
  const auto dump = dsdiag::trace::ParseFlightDump(text, kPath, &issue);
  if (dump) {
    CheckDump(*dump);
  } else {
    CheckIssue(issue);
  }
  return 0;
}
