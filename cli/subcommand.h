// Subcommand: one `dsdiag <name>` command. Each lives in its own <name>_command.{h,cc}
// and is registered in commands.cc; main.cc dispatches and turns typed errors into exit
// statuses (docs/contract.md: 2 for bad usage or unreadable input).
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
  virtual std::string Usage() const = 0;             // the command's own `--help` text
  // What `--help` prints: Usage() and where the contract it is part of is documented.
  std::string Help() const { return Usage() + kContractPointer; }

  static constexpr const char* kContractPointer =
      "\nThe contract (commands, flags, --inject and finding kinds, the JSON, exit statuses):\n"
      "docs/contract.md in dsdiag's source tree; finding kinds: docs/findings.md.\n";
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
