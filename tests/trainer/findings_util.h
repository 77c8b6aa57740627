// Helpers of the trainer's ghost tests: `dsdiag compare --format json` on a run and the
// assertions every such test makes (which serious findings, which ranks).
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "tests/trainer/trainer_test_util.h"
#include "trace/json_value.h"

namespace dsdiag::trainer_test {

// `dsdiag compare <run_dir> --format json`: the findings array (exit status 0 or 1 expected;
// anything else fails the test). The output goes to `run_dir`.compare.json.
std::vector<trace::JsonValue> CompareRun(const std::string& run_dir);

// "kind/severity" of every warning and error, sorted: the exact set a run must give.
// `straggler` is timing-based: ranks sharing two loaded cores can really straggle in a
// clean run, so it is left out unless `timing` (its own tests ask for it).
std::set<std::string> Serious(const std::vector<trace::JsonValue>& findings, bool timing = false);

// The first finding of `kind` and `severity`; fails the test and returns null when none.
const trace::JsonValue* FindFinding(const std::vector<trace::JsonValue>& findings,
                                    const std::string& kind, const std::string& severity);

std::vector<int64_t> Ranks(const trace::JsonValue& finding);

}  // namespace dsdiag::trainer_test
