// Runs a command line through the shell with stdout and stderr captured to files (pipes,
// not terminals: no colour, no progress lines), as a user's script would run dsdiag.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "tests/support/files.h"

namespace dsdiag::test_support {

struct CommandResult {
  int status = -1;  // exit status, -1 when killed by a signal
  std::string out;
  std::string err;
};

// 'text' for the shell (test-controlled text: no single quotes in it).
inline std::string Quote(const std::string& text) { return "'" + text + "'"; }

// `command` with stdin from /dev/null; its output goes through scratch files named after
// this process, removed afterwards.
inline CommandResult RunShell(const std::string& command) {
  static std::atomic<int> counter{0};
  const std::string base =
      (std::filesystem::temp_directory_path() /
       ("dsdiag-shell-" + std::to_string(::getpid()) + "-" + std::to_string(counter++)))
          .string();
  const int raw = std::system(
      (command + " >" + Quote(base + ".out") + " 2>" + Quote(base + ".err") + " </dev/null")
          .c_str());
  CommandResult r;
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  r.out = ReadFile(base + ".out");
  r.err = ReadFile(base + ".err");
  std::error_code ignored;
  std::filesystem::remove(base + ".out", ignored);
  std::filesystem::remove(base + ".err", ignored);
  return r;
}

#ifdef DSDIAG_BINARY
// `dsdiag <args>`; `args` go on the command line as they are (quote what needs quoting).
inline CommandResult RunDsdiag(const std::string& args) {
  return RunShell(Quote(DSDIAG_BINARY) + " " + args);
}
#endif

}  // namespace dsdiag::test_support
