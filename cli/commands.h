// Factories of every subcommand; each is defined in its <name>_command.cc.
#pragma once

#include <memory>

#include "cli/subcommand.h"

namespace dsdiag::cli {

std::unique_ptr<Subcommand>
CreateTrainCommand();  // train_command.cc (reports when built without LibTorch)
std::unique_ptr<Subcommand> CreateRunCommand();          // run_command.cc
std::unique_ptr<Subcommand> CreateCompareCommand();      // compare_command.cc
std::unique_ptr<Subcommand> CreateTimelineCommand();     // timeline_command.cc
std::unique_ptr<Subcommand> CreateReportCommand();       // report_command.cc
std::unique_ptr<Subcommand> CreateSynthCommand();        // synth_command.cc
std::unique_ptr<Subcommand> CreateLoaderSweepCommand();  // loader_sweep_command.cc

}  // namespace dsdiag::cli
