// Command-line parsing shared by the subcommands, on boost::program_options, with
// boost's exceptions turned into UsageError so that every command reports bad flags alike.
#pragma once

#include <boost/program_options.hpp>
#include <string>
#include <vector>

namespace dsdiag::cli {

namespace po = boost::program_options;

// Parses `args` against `options` (plus positionals) into *vm; throws UsageError.
// `--help` is added to `options` and reported by returning true.
bool ParseArgs(const std::vector<std::string>& args, po::options_description& options,
               const po::positional_options_description& positional, po::variables_map* vm);

// True when the stream is a terminal (colour, progress lines).
bool StdoutIsTerminal();
bool StderrIsTerminal();

}  // namespace dsdiag::cli
