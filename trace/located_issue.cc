#include "trace/located_issue.h"

#include <utility>

namespace dsdiag::trace {

std::string LocatedIssue::ToString() const {
  std::string s = file;
  if (line > 0) s += ":" + std::to_string(line) + ":" + std::to_string(column);
  return s + ": expected " + expected + ", found " + found;
}

LocatedIssue IssueAt(std::string file, std::string_view text, size_t offset, std::string expected,
                     std::string found) {
  LocatedIssue issue;
  issue.file = std::move(file);
  issue.line = 1;
  issue.column = 1;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++issue.line;
      issue.column = 1;
    } else {
      ++issue.column;
    }
  }
  issue.expected = std::move(expected);
  issue.found = std::move(found);
  return issue;
}

}  // namespace dsdiag::trace
