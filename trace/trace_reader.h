// TraceReader: streams one rank's trace record by record, never loading the file whole.
//
// The file is read in chunks and split into lines, parsed with simdjson a block of lines
// at a time (one call per line costs more than the parse of a short line); from a line the
// block parse cannot vouch for on, the rest of its block is parsed line by line, so that an
// issue reads the same wherever its line sits.
// A line that is not a JSON object, or lacks the fields every record carries
// ("type" string, "ts" and "step" integers), becomes a LocatedIssue naming file, line,
// column and what was expected, and reading goes on with the next line. A last line
// without its '\n' (the process died mid-write) is reported as a truncated tail.
//
//   auto reader = TraceReader::Open(path, &error);
//   Record r;
//   while (reader->Next(&r)) { if (r.type() == rec::kStep) ... r.Int("loss") ... }
//   for (const LocatedIssue& i : reader->issues()) ...
//
// Record, OwnedRecord and FieldKey are declared in trace/record.h, ToJsonValue in
// trace/json_from_dom.h; this header includes both, so that its users need no other.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "trace/json_from_dom.h"  // ToJsonValue, for this header's users
#include "trace/located_issue.h"
#include "trace/record.h"
#include "trace/record_types.h"
#include "trace/trace_header.h"

namespace dsdiag::trace {

class ReaderPool;

class TraceReader {
 public:
  // Opens `path`; returns null and sets *error when it cannot be opened.
  static std::unique_ptr<TraceReader> Open(const std::string& path, std::string* error);
  ~TraceReader();

  // Advances to the next valid record. Returns false at end of file.
  bool Next(Record* out);
  // The same into a record that outlives the next call (slower: the line is copied).
  bool NextOwned(OwnedRecord* out);

  // The header parsed from line 1, when line 1 was a valid header record.
  const std::optional<TraceHeader>& header() const;
  // Reads line 1 (if not yet read) and returns the header, or nullopt with an issue.
  const std::optional<TraceHeader>& ReadHeader();
  // Reads line 1 (if not yet read) without parsing it, for a caller that holds the header
  // already (the step driver: the run loader read it): header() stays empty. Records are then
  // read as those of `known`'s schema. Keeps a parsed header's ~1.5 KB per rank out of a
  // driver that holds every rank's reader (131,072 ranks: 200 MB).
  void SkipHeader(const TraceHeader& known);

  // Suspension, for a driver that reads many files a few steps at a time (ReaderPool):
  // makes the next Next() hand out again the record the last Next() returned, gives the line
  // buffer and the JSON parser to `pool`, and with `close_file` closes the file until then
  // (reopened by its path). Records handed out become invalid. Line numbers, lines_read,
  // bytes_read (at the end), issues and the header read exactly as without suspension: the
  // rewound line is not counted twice. False, the reader unchanged and its records valid,
  // for a trace that cannot seek (compressed, a pipe), after a read error, when the last
  // Next() returned no record, or one expanded from a v2 compact record (trace/
  // compact_records.h: its line would expand again).
  bool Suspend(ReaderPool* pool, bool close_file);
  // Takes buffers from `pool` for the reads to come (only those this reader lacks), whether
  // it was suspended or is fresh; reading goes on where Suspend left it.
  void Resume(ReaderPool* pool);
  bool suspended() const;

  const std::string& path() const;
  // Problems met so far. Capped at kMaxIssuesKept examples; issue_count() counts all.
  const std::vector<LocatedIssue>& issues() const;
  int64_t issue_count() const;
  bool saw_truncated_tail() const;
  int64_t lines_read() const;
  // Bytes read from the file so far; while suspended, the offset reading resumes at.
  int64_t bytes_read() const;
  static constexpr int kMaxIssuesKept = 20;

  // Lines read by every reader of this process that has been destroyed: how often a command
  // read its input (tests check that `timeline` reads each trace once).
  static int64_t LinesReadByClosedReaders();

 private:
  struct State;
  explicit TraceReader(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace dsdiag::trace
