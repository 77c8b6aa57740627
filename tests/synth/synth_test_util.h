// Helpers of the synth tests: temporary directories, reading rank files, and the records
// of a trace reduced to the fields the tests look at (parsed with simdjson, independently
// of the trace reader under test elsewhere).
#pragma once

#include <gtest/gtest.h>
#include <simdjson.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/files.h"
#include "tests/support/temp_dir.h"

namespace dsdiag::synth::testing {

using test_support::ReadFile;
using test_support::SplitLines;

// A scratch dir named dsdiag-synth-XXXXXX.
class TempDir : public test_support::TempDir {
 public:
  TempDir() : test_support::TempDir("synth") {}
};

// One record, with the fields the tests use (absent ints are -1, absent strings empty).
struct Record {
  std::string type;
  int64_t ts = -1;
  int64_t step = -1;
  std::string name;     // phase name
  std::string tag;      // coll tag
  std::string reason;   // end reason
  std::string message;  // error message
  int64_t dur = -1;
  int64_t seq = -1;
  int64_t status = -1;
  int64_t n_missing = -1;
  bool has_missing = false;
  std::vector<int64_t> missing;
  std::string raw;
};

inline std::string StringOr(simdjson::dom::element e, const char* key) {
  std::string_view v;
  return e[key].get(v) == simdjson::SUCCESS ? std::string(v) : std::string();
}

inline int64_t IntOr(simdjson::dom::element e, const char* key) {
  int64_t v = -1;
  return e[key].get(v) == simdjson::SUCCESS ? v : -1;
}

// Parses every line; a line that does not parse fails the test (unless it is the last
// and `allow_cut_tail`), and is not returned.
inline std::vector<Record> ParseRecords(const std::string& text, bool allow_cut_tail = false) {
  std::vector<Record> out;
  simdjson::dom::parser parser;
  const std::vector<std::string> lines = SplitLines(text);
  for (size_t i = 0; i < lines.size(); ++i) {
    simdjson::dom::element e;
    if (parser.parse(lines[i]).get(e) != simdjson::SUCCESS) {
      if (!(allow_cut_tail && i + 1 == lines.size())) {
        ADD_FAILURE() << "line " << i + 1 << " does not parse: " << lines[i];
      }
      continue;
    }
    Record r;
    r.type = StringOr(e, "type");
    r.ts = IntOr(e, "ts");
    r.step = IntOr(e, "step");
    r.name = StringOr(e, "name");
    r.tag = StringOr(e, "tag");
    r.reason = StringOr(e, "reason");
    r.message = StringOr(e, "message");
    r.dur = IntOr(e, "dur");
    r.seq = IntOr(e, "seq");
    r.status = IntOr(e, "status");
    r.n_missing = IntOr(e, "n_missing");
    simdjson::dom::array missing;
    if (e["missing"].get(missing) == simdjson::SUCCESS) {
      r.has_missing = true;
      for (simdjson::dom::element m : missing) r.missing.push_back(int64_t(m));
    }
    r.raw = lines[i];
    out.push_back(std::move(r));
  }
  return out;
}

template <typename Pred>
std::vector<Record> Filter(const std::vector<Record>& records, Pred pred) {
  std::vector<Record> out;
  for (const Record& r : records)
    if (pred(r)) out.push_back(r);
  return out;
}

inline std::vector<Record> OfType(const std::vector<Record>& records, const std::string& type) {
  return Filter(records, [&](const Record& r) { return r.type == type; });
}

}  // namespace dsdiag::synth::testing
