// The one list of subcommands. A command is added here and nowhere else.
#include "cli/commands.h"

namespace dsdiag::cli {

std::vector<std::unique_ptr<Subcommand>> CreateSubcommands() {
  std::vector<std::unique_ptr<Subcommand>> commands;
  commands.push_back(CreateTrainCommand());
  commands.push_back(CreateRunCommand());
  commands.push_back(CreateCompareCommand());
  commands.push_back(CreateTimelineCommand());
  commands.push_back(CreateReportCommand());
  commands.push_back(CreateLoaderSweepCommand());
  commands.push_back(CreateSynthCommand());
  return commands;
}

}  // namespace dsdiag::cli
