// Runs the built `dsdiag` binary (DSDIAG_BINARY) from the repo root (DSDIAG_SOURCE_DIR),
// so that run dirs are given relative to it and `run.dir` in the output is stable.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace dsdiag::cli::testing {

struct CommandResult {
  int status = -1;  // exit status, or -1 when killed by a signal
  std::string out;
  std::string err;
};

inline std::string ReadWhole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// `args` is appended to the command line as is (quote what needs quoting).
inline CommandResult RunDsdiag(const std::string& args) {
  namespace fs = std::filesystem;
  static int counter = 0;
  const std::string base =
      (fs::temp_directory_path() /
       ("dsdiag-cli-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++)))
          .string();
  const std::string command = "cd '" DSDIAG_SOURCE_DIR "' && '" DSDIAG_BINARY "' " + args + " >'" +
                              base + ".out' 2>'" + base + ".err' </dev/null";
  const int raw = std::system(command.c_str());
  CommandResult r;
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  r.out = ReadWhole(base + ".out");
  r.err = ReadWhole(base + ".err");
  std::error_code ec;
  fs::remove(base + ".out", ec);
  fs::remove(base + ".err", ec);
  return r;
}

}  // namespace dsdiag::cli::testing
