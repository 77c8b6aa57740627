// `dsdiag timeline RUN_DIR -o FILE.json [--steps A:B] [--ranks LIST]`: writes one Chrome
// Trace Event JSON timeline of every rank on rank 0's clock, with the findings of
// `dsdiag compare` as instant events (timeline/timeline.h does the work).
//
// Exit status: 0 written (whatever the findings: a timeline is a picture, not a check —
// `dsdiag compare` gives the verdict); 2 for bad usage, a run dir that cannot be analysed
// (the same messages as compare) or an output file that cannot be written (named).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "cli/subcommand.h"
#include "timeline/selection.h"
#include "timeline/timeline_format.h"

namespace dsdiag::cli {

struct TimelineArgs {
  std::string run_dir;
  std::string output;  // "-": stdout
  timeline::Selection selection;
  // --format, else by the output's name: .pftrace / .perfetto-trace are Perfetto's.
  timeline::TimelineFormat format = timeline::TimelineFormat::kJson;
};

// Parses and checks the arguments after `timeline` without reading or writing anything;
// throws UsageError. Returns false when --help was asked for. Public for the tests and fuzz/.
bool ParseTimelineArgs(const std::vector<std::string>& args, TimelineArgs* out);

class TimelineCommand : public Subcommand {
 public:
  std::string_view name() const override { return "timeline"; }
  std::string_view description() const override;
  std::string Usage() const override;
  int Run(const std::vector<std::string>& args) override;
};

}  // namespace dsdiag::cli
