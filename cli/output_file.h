// OutputFile: where a command writes the file it was asked for (-o FILE). The bytes go to a
// hidden temporary file beside FILE, renamed over it only when complete: a run that fails
// half-way (disk full, bad input found late, Ctrl-C) never leaves a truncated report or
// timeline that looks whole. "-" is stdout, where the command allows it.
#pragma once

#include <fstream>
#include <ostream>
#include <string>

namespace dsdiag::cli {

class OutputFile {
 public:
  // Throws InputError naming `path` when it cannot be created.
  explicit OutputFile(std::string path);
  ~OutputFile();  // removes the temporary file unless committed
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  std::ostream& stream();
  const std::string& path() const { return path_; }
  bool is_stdout() const { return path_ == "-"; }

  // Flushes and moves the file into place. Throws InputError when a write or the rename
  // failed (disk full, ...).
  void Commit();

 private:
  std::string path_;
  std::string temp_;
  std::ofstream file_;
  bool committed_ = false;
};

}  // namespace dsdiag::cli
