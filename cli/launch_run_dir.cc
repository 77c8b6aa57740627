#include "cli/launch_run_dir.h"

#include <ctime>
#include <filesystem>

#include "cli/subcommand.h"
#include "cli/train_options.h"
#include "trace/run_files.h"

namespace dsdiag::cli {

namespace fs = std::filesystem;

std::string FreshRunDir() {
  const std::string base = TimestampRunDir(std::time(nullptr));
  std::string dir = base;
  for (int n = 2; fs::exists(dir); ++n) dir = base + "-" + std::to_string(n);
  return dir;
}

int RemoveEarlierTraces(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return 0;
  int removed = 0;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (!trace::ParseRankTraceFileName(name) && !trace::ParseFlightDumpFileName(name)) continue;
    if (fs::remove(entry.path(), ec)) ++removed;
  }
  if (ec) throw InputError("cannot clean run directory " + dir + ": " + ec.message());
  return removed;
}

}  // namespace dsdiag::cli
