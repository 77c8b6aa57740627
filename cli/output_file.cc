#include "cli/output_file.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "cli/subcommand.h"

namespace dsdiag::cli {

OutputFile::OutputFile(std::string path) : path_(std::move(path)) {
  if (is_stdout()) return;
  const std::filesystem::path target(path_);
  temp_ = (target.parent_path() / ("." + target.filename().string() + ".partial")).string();
  file_.open(temp_, std::ios::binary | std::ios::trunc);
  if (!file_) throw InputError("cannot write '" + path_ + "': " + std::strerror(errno));
}

OutputFile::~OutputFile() {
  if (is_stdout() || committed_) return;
  file_.close();
  std::error_code ignored;
  std::filesystem::remove(temp_, ignored);
}

std::ostream& OutputFile::stream() { return is_stdout() ? std::cout : file_; }

void OutputFile::Commit() {
  if (is_stdout()) {
    std::cout.flush();
    if (!std::cout) throw InputError("error writing to stdout");
    return;
  }
  file_.flush();
  file_.close();
  if (file_.fail()) throw InputError("error writing '" + path_ + "'");
  std::error_code ec;
  std::filesystem::rename(temp_, path_, ec);
  if (ec) throw InputError("cannot write '" + path_ + "': " + ec.message());
  committed_ = true;
}

}  // namespace dsdiag::cli
