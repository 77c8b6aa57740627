// `dsdiag report RUN_DIR -o FILE.html [--title TEXT]`: one self-contained HTML page with the
// findings of `dsdiag compare` and inline-SVG charts of the run (report/report.h does the
// work).
//
// Exit status: 0 written (whatever the findings: like the timeline, a report is a picture,
// `dsdiag compare` gives the verdict); 2 for bad usage, a run dir that cannot be analysed
// (the same messages as compare) or an output file that cannot be written (named). The page
// is written to a temporary name beside FILE and renamed when complete, so a failed run
// leaves no half-written report.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "cli/subcommand.h"

namespace dsdiag::cli {

struct ReportArgs {
  std::string run_dir;
  std::string output;
  std::string title;
};

// Parses and checks the arguments after `report` without reading or writing anything;
// throws UsageError. Returns false when --help was asked for. Public for the tests and fuzz/.
bool ParseReportArgs(const std::vector<std::string>& args, ReportArgs* out);

class ReportCommand : public Subcommand {
 public:
  std::string_view name() const override { return "report"; }
  std::string_view description() const override;
  std::string Usage() const override;
  int Run(const std::vector<std::string>& args) override;
};

}  // namespace dsdiag::cli
