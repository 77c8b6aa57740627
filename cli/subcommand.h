// Subcommand: one `dsdiag <name>` command. Each lives in its own <name>_command.{h,cc}
// and is registered in commands.cc; main.cc dispatches and turns typed errors into exit
// statuses (CONTRACT.md: 2 for bad usage or unreadable input).
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace dsdiag::cli {

class Subcommand {
 public:
  virtual ~Subcommand() = default;
  virtual std::string_view name() const = 0;
  virtual std::string_view description() const = 0;  // one line for `dsdiag help`
  virtual std::string Usage() const = 0;             // the full `--help` text
  // `args` excludes the program and command names. Returns the exit status.
  virtual int Run(const std::vector<std::string>& args) = 0;
};

// Bad command line: exit 2 with the message and a pointer to --help.
class UsageError : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Input that cannot be read at all (missing run dir, duplicate ranks...): exit 2.
// The message names the file (and line) concerned.
class InputError : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Every subcommand, in `dsdiag help` order. Defined in commands.cc.
std::vector<std::unique_ptr<Subcommand>> CreateSubcommands();

}  // namespace dsdiag::cli
