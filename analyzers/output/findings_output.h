// How `dsdiag compare` shows a CompareResult.
//
// JSON (docs/contract.md, schema "dsdiag.findings/1"): one object, each top-level key on its own
// line and each finding on its own line, so that golden files diff line by line:
//   {"schema":"dsdiag.findings/1",
//    "run":{"dir":..,"run_id":..,"world_size":4,"ranks_found":[..],"steps":50,...},
//    "counts":{"error":1,"warning":0,"info":2},
//    "findings":[
//     {"kind":..,"severity":..,"ranks":[..],"step":3|null,"subject":..|null,"summary":..,
//      "evidence":{..},"hint":..}
//    ]}
// `counts` always counts every finding; `findings` holds those at or above min_severity.
//
// Text: a one-screen summary of the run, one aligned table row per finding (the summary in
// the last column), then each finding in full with its evidence and hint. Severity tags are
// coloured with ANSI escapes only when asked (the CLI asks when stdout is a terminal).
#pragma once

#include <string>
#include <vector>

#include "analyzers/framework/compare.h"
#include "analyzers/framework/finding.h"

namespace dsdiag::analyzers {

inline constexpr char kFindingsSchema[] = "dsdiag.findings/1";

struct OutputOptions {
  Severity min_severity = Severity::kInfo;
  bool color = false;  // text only
};

std::string FindingsToJson(const CompareResult& result, const OutputOptions& options = {});
std::string FindingsToText(const CompareResult& result, const OutputOptions& options = {});

}  // namespace dsdiag::analyzers
