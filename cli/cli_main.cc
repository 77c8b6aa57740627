#include "cli/cli_main.h"

#include <iostream>
#include <string>
#include <vector>

#include "cli/subcommand.h"
#include "trace/record_types.h"

namespace dsdiag::cli {
namespace {

void PrintOverview(const std::vector<std::unique_ptr<Subcommand>>& commands, std::ostream& os) {
  os << "dsdiag " << DSDIAG_VERSION << " — measurements for distributed-training ghosts\n\n"
     << "usage: dsdiag <command> [options]\n\ncommands:\n";
  for (const auto& c : commands) {
    std::string name(c->name());
    os << "  " << name << std::string(name.size() < 14 ? 14 - name.size() : 1, ' ')
       << c->description() << "\n";
  }
  os << "\n'dsdiag help <command>' or 'dsdiag <command> --help' for a command's options.\n"
     << Subcommand::kContractPointer;
}

Subcommand* Find(const std::vector<std::unique_ptr<Subcommand>>& commands,
                 const std::string& name) {
  for (const auto& c : commands)
    if (c->name() == name) return c.get();
  return nullptr;
}

}  // namespace

int RunCli(int argc, char** argv) {
  auto commands = CreateSubcommands();
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    PrintOverview(commands, std::cerr);
    return 2;
  }
  const std::string name = args[0];
  if (name == "--version" || name == "version") {
    std::cout << "dsdiag " << DSDIAG_VERSION << " (trace schema " << trace::kSchema << ")\n";
    return 0;
  }
  if (name == "help" || name == "--help" || name == "-h") {
    if (args.size() < 2) {
      PrintOverview(commands, std::cout);
      return 0;
    }
    Subcommand* c = Find(commands, args[1]);
    if (!c) {
      std::cerr << "dsdiag: unknown command '" << args[1] << "'; 'dsdiag help' lists them\n";
      return 2;
    }
    std::cout << c->Help();
    return 0;
  }
  Subcommand* command = Find(commands, name);
  if (!command) {
    std::cerr << "dsdiag: unknown command '" << name << "'; 'dsdiag help' lists them\n";
    return 2;
  }
  args.erase(args.begin());
  try {
    return command->Run(args);
  } catch (const UsageError& e) {
    std::cerr << "dsdiag " << name << ": " << e.what() << "\n"
              << "Try 'dsdiag " << name << " --help'.\n";
    return 2;
  } catch (const InputError& e) {
    std::cerr << "dsdiag " << name << ": " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "dsdiag " << name << ": internal error: " << e.what() << "\n";
    return 3;
  }
}

}  // namespace dsdiag::cli
