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

// The message of a boost parse error, for a UsageError. Use it instead of e.what(): boost
// 1.74 builds the message by replacing placeholders such as %value% with the user's text
// until none is left, so an argument that itself contains the placeholder ("--heads
// %value%") made what() loop forever. May change `e`'s stored substitutions.
std::string ParseErrorMessage(po::error& e);

// True when the stream is a terminal (colour, progress lines).
bool StdoutIsTerminal();
bool StderrIsTerminal();

}  // namespace dsdiag::cli
