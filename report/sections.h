// The sections of the report page, in the order the page shows them. Each appends one
// <section id="..."> (or, for a section with nothing to show, a note saying why) to *out.
// page.cc puts them together (report.h).
#pragma once

#include <string>

#include "analyzers/framework/compare.h"
#include "report/config_diff.h"
#include "report/run_collector.h"
#include "trace/loader_sweep_file.h"

namespace dsdiag::report {

// <head> with the inline style sheet, the title, the run summary and the navigation.
void AppendPageStart(const std::string& title, const analyzers::CompareResult& compare,
                     const RunCollector& data, bool has_sweep, std::string* out);
// The findings as the JSON of `dsdiag compare --format json`, for scripts, and </html>.
void AppendPageEnd(const analyzers::CompareResult& compare, std::string* out);

// id="findings": counts by severity, an index table, each finding in full.
void AppendFindingsSection(const analyzers::CompareResult& compare, std::string* out);
// id="heatmap" (collective wait) and id="heatmap-delay" (arrival delay), rank x step.
void AppendHeatmapSections(const RunCollector& data, std::string* out);
// id="phases": mean step time per rank, stacked by phase.
void AppendPhaseSection(const RunCollector& data, std::string* out);
// id="loss" and, when the run has `scaler` records, id="loss-scale".
void AppendCurveSections(const RunCollector& data, std::string* out);
// id="loader-sweep", only when RUN_DIR has a loader-sweep.json.
void AppendLoaderSweepSection(const trace::LoaderSweepFile& sweep, std::string* out);
// id="config": header settings that differ across ranks, and the common ones.
void AppendConfigSection(const ConfigDiff& diff, std::string* out);

}  // namespace dsdiag::report
