// Helpers shared by the trace tests: a temporary directory and whole-file I/O (the
// project-wide ones of tests/support, under the names these tests use).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "tests/support/files.h"
#include "tests/support/temp_dir.h"
#include "trace/trace_reader.h"

namespace dsdiag::trace::testing {

// A fresh directory named dsdiag-trace-XXXXXX, removed with everything in it.
class TempDir : public test_support::TempDir {
 public:
  TempDir() : test_support::TempDir("trace") {}
};

// Line 1 of a minimal valid trace.
inline constexpr char kHeader[] =
    R"({"type":"header","ts":1,"step":0,"schema":"dsdiag.trace/1","run_id":"r","rank":0,"world_size":2})";

// Writes `text` as rank 0's trace in `dir` and opens it (null, with a test failure, when it
// cannot be opened).
inline std::unique_ptr<TraceReader> OpenTraceText(const TempDir& dir, const std::string& text) {
  const std::string path = dir.path() + "/rank-00000.jsonl";
  test_support::WriteFile(path, text);
  std::string error;
  auto reader = TraceReader::Open(path, &error);
  EXPECT_TRUE(reader) << error;
  return reader;
}

using test_support::ReadFile;
using test_support::SplitLines;
using test_support::WriteFile;

}  // namespace dsdiag::trace::testing
