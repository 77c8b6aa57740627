// Helpers shared by the trace tests: a temporary directory and whole-file I/O (the
// project-wide ones of tests/support, under the names these tests use).
#pragma once

#include <string>

#include "tests/support/files.h"
#include "tests/support/temp_dir.h"

namespace dsdiag::trace::testing {

// A fresh directory named dsdiag-trace-XXXXXX, removed with everything in it.
class TempDir : public test_support::TempDir {
 public:
  TempDir() : test_support::TempDir("trace") {}
};

// Line 1 of a minimal valid trace.
inline constexpr char kHeader[] =
    R"({"type":"header","ts":1,"step":0,"schema":"dsdiag.trace/1","run_id":"r","rank":0,"world_size":2})";

using test_support::ReadFile;
using test_support::SplitLines;
using test_support::WriteFile;

}  // namespace dsdiag::trace::testing
