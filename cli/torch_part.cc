#include "cli/torch_part.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>

namespace dsdiag::cli {
namespace {

constexpr const char* kTorchExecutableName = "dsdiag-torch";

std::unique_ptr<TorchPart>& Linked() {
  static std::unique_ptr<TorchPart> part;
  return part;
}

}  // namespace

void SetLinkedTorchPart(TorchPart part) { Linked() = std::make_unique<TorchPart>(std::move(part)); }

const TorchPart* LinkedTorchPart() { return Linked().get(); }

std::string TorchExecutable() {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (LinkedTorchPart() != nullptr) return ec ? "/proc/self/exe" : self.string();
  if (ec) return "";
  const fs::path torch = self.parent_path() / kTorchExecutableName;
  return access(torch.c_str(), X_OK) == 0 ? torch.string() : "";
}

int ExecTorchPart(const std::string& command, const std::vector<std::string>& args) {
  const std::string torch = TorchExecutable();
  if (torch.empty()) {
    std::cerr << "dsdiag " << command << ": this dsdiag was built without LibTorch (no "
              << kTorchExecutableName << " beside it); `dsdiag " << command << "` needs it\n";
    return 2;
  }
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(torch.c_str()));
  argv.push_back(const_cast<char*>(command.c_str()));
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::cout.flush();
  std::cerr.flush();
  execv(torch.c_str(), argv.data());
  std::cerr << "dsdiag " << command << ": cannot run " << torch << ": " << std::strerror(errno)
            << "\n";
  return 2;
}

}  // namespace dsdiag::cli
