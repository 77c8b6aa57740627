#include "cli/options.h"

#include <unistd.h>

#include <algorithm>
#include <map>

#include "cli/subcommand.h"

namespace dsdiag::cli {
namespace {

// Stands in for '%' in the user's text while boost substitutes; a control character no
// command line word needs.
constexpr char kPercentStandIn = '\x1a';

// Reaches the protected placeholder values of a boost error (through a pointer to member
// named via this derived class, which C++ allows); nothing else is touched.
struct SubstitutionAccess : po::error_with_option_name {
  static std::map<std::string, std::string>& Of(po::error_with_option_name& e) {
    return e.*&SubstitutionAccess::m_substitutions;
  }
};

}  // namespace

std::string ParseErrorMessage(po::error& e) {
  auto* named = dynamic_cast<po::error_with_option_name*>(&e);
  if (named == nullptr) return e.what();
  // No '%' left in any value, so no value can contain a placeholder; put them back after.
  for (auto& [key, value] : SubstitutionAccess::Of(*named))
    std::replace(value.begin(), value.end(), '%', kPercentStandIn);
  std::string message = named->what();
  std::replace(message.begin(), message.end(), kPercentStandIn, '%');
  return message;
}

bool ParseArgs(const std::vector<std::string>& args, po::options_description& options,
               const po::positional_options_description& positional, po::variables_map* vm) {
  options.add_options()("help,h", "show this help");
  try {
    po::store(po::command_line_parser(args).options(options).positional(positional).run(), *vm);
    if (vm->count("help")) return true;
    po::notify(*vm);
  } catch (po::error& e) {
    throw UsageError(ParseErrorMessage(e));
  }
  return false;
}

bool StdoutIsTerminal() { return isatty(STDOUT_FILENO) == 1; }
bool StderrIsTerminal() { return isatty(STDERR_FILENO) == 1; }

}  // namespace dsdiag::cli
