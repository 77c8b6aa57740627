// LocatedIssue: what was wrong with an input file, and where — the one error shape of every
// dsdiag reader (rank traces, flight dumps, loader-sweep results):
//
//   rank-00001.jsonl:17:3: expected integer field "ts", found "abc"
//   flight-rank-00002.json:1:12: expected array field "entries", found 7
//
// Readers never stop on damage: they report a LocatedIssue and go on where they can
// (docs/findings.md, trace-corrupt).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace dsdiag::trace {

struct LocatedIssue {
  std::string file;
  int64_t line = 0;             // 1-based; 0 when the file could not be read at all
  int64_t column = 0;           // 1-based byte column of the first offending byte
  std::string expected;         // e.g. "a JSON object", "integer field \"ts\""
  std::string found;            // a short excerpt of what was there
  bool truncated_tail = false;  // a trace's last line has no '\n': the writer died mid-line
  // "FILE:LINE:COL: expected X, found Y" ("FILE: expected X, found Y" when line is 0).
  std::string ToString() const;
};

// The issue at byte `offset` of `text` (a whole file), its line and column counted there.
LocatedIssue IssueAt(std::string file, std::string_view text, size_t offset, std::string expected,
                     std::string found);

}  // namespace dsdiag::trace
