// A `dsdiag synth` run in a fresh directory, analysed in process by every analyzer of
// `dsdiag compare` (RunCompare): the end-to-end check of a ghost at any number of ranks.
// Needs DSDIAG_BINARY and a link to dsdiag_analyzers.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "analyzers/framework/compare.h"
#include "analyzers/framework/finding.h"
#include "tests/support/shell.h"
#include "tests/support/temp_dir.h"

namespace dsdiag::test_support {

class AnalysedSynthRun {
 public:
  // `args`: the synth options (ranks, steps, injects); --out is added.
  explicit AnalysedSynthRun(const std::string& args) : dir_("synth-run") {
    synth_ = RunDsdiag("synth " + args + " --out " + Quote(dir_ / "run"));
    if (ok()) result_ = analyzers::RunCompare(dir_ / "run");
  }
  bool ok() const { return synth_.status == 0; }
  // synth's stderr, for the message of a failed ASSERT_TRUE(run.ok()).
  const std::string& synth_errors() const { return synth_.err; }
  const analyzers::CompareResult& result() const { return result_; }

  std::vector<analyzers::Finding> Of(std::string_view kind) const {
    std::vector<analyzers::Finding> out;
    for (const analyzers::Finding& f : result_.findings)
      if (f.kind == kind) out.push_back(f);
    return out;
  }
  // Findings at warning or above, one "kind summary" line each, for messages.
  std::string Serious() const {
    std::string s;
    for (const analyzers::Finding& f : result_.findings)
      if (f.severity >= analyzers::Severity::kWarning) s += f.kind + " " + f.summary + "\n";
    return s;
  }

 private:
  TempDir dir_;
  CommandResult synth_;
  analyzers::CompareResult result_;
};

}  // namespace dsdiag::test_support
