// `dsdiag compare RUN_DIR [--format text|json] [--min-severity info|warning|error]`:
// reads every rank's trace (and any flight-recorder dumps) in RUN_DIR, diffs the ranks
// and prints the findings (analyzers/compare.h does the work, findings_output.h the
// printing).
//
// Exit status (docs/contract.md): 0 when no finding is an error, 1 when one is — counted over
// every finding, including those --min-severity hides from the list, so that a CI job
// cannot turn a failure green by filtering — and 2 for bad usage or a run dir that cannot
// be analysed at all (the message names the dir or files).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analyzers/framework/finding.h"
#include "cli/subcommand.h"

namespace dsdiag::cli {

struct CompareArgs {
  enum class Format { kText, kJson };
  std::string run_dir;
  Format format = Format::kText;
  analyzers::Severity min_severity = analyzers::Severity::kInfo;
  std::optional<std::string> fr_prefix;  // --fr-prefix: the Flight Recorder dumps' prefix
};

// Parses and checks the arguments after `compare` without reading anything; throws
// UsageError. Returns false when --help was asked for. Public for the tests and fuzz/.
bool ParseCompareArgs(const std::vector<std::string>& args, CompareArgs* out);

class CompareCommand : public Subcommand {
 public:
  std::string_view name() const override { return "compare"; }
  std::string_view description() const override;
  std::string Usage() const override;
  int Run(const std::vector<std::string>& args) override;
};

}  // namespace dsdiag::cli
