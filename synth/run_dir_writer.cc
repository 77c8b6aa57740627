#include "synth/run_dir_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <exception>
#include <filesystem>
#include <mutex>
#include <thread>
#include <vector>

#include "synth/torch_fr_dumps.h"
#include "trace/run_files.h"
#include "trace/torch_fr/torch_fr_files.h"

namespace dsdiag::synth {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void IoFail(const char* what, const std::string& path) {
  throw SynthIoError(std::string(what) + " " + path + ": " + std::strerror(errno));
}

// A file a synth run writes: a rank trace, a flight dump, one of synth's Flight Recorder dumps.
bool IsSynthOutput(const std::string& name) {
  if (trace::ParseRankTraceFileName(name) || trace::ParseFlightDumpFileName(name)) return true;
  const auto fr = trace::SplitTorchFrFileName(name);
  return fr && fr->prefix == kTorchFrPrefix;
}

}  // namespace

bool WriteAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

void PrepareRunDir(const std::string& dir, bool force) {
  std::error_code ec;
  if (fs::exists(dir, ec)) {
    if (!fs::is_directory(dir, ec)) throw SynthSpecError("--out " + dir + " is not a directory");
    if (fs::directory_iterator(dir, ec) != fs::directory_iterator() && !force) {
      throw SynthSpecError("--out " + dir +
                           " is not empty; choose a new directory, or pass --force to "
                           "replace the rank traces in it");
    }
    if (ec) throw SynthIoError("cannot read " + dir + ": " + ec.message());
    for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
      if (!IsSynthOutput(e.path().filename().string())) continue;
      if (!fs::remove(e.path(), ec)) {
        throw SynthIoError("cannot remove " + e.path().string() + ": " + ec.message());
      }
    }
    if (ec) throw SynthIoError("cannot read " + dir + ": " + ec.message());
    return;
  }
  fs::create_directories(dir, ec);
  if (ec) throw SynthIoError("cannot create " + dir + ": " + ec.message());
}

void WriteFileBytes(const std::string& path, const std::string& bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) IoFail("cannot create", path);
  if (!WriteAll(fd, bytes.data(), bytes.size())) {
    const int saved = errno;
    ::close(fd);
    errno = saved;
    IoFail("cannot write", path);
  }
  if (::close(fd) != 0) IoFail("cannot write", path);
}

WriteResult WritePerRank(
    int ranks, const WriteOptions& options,
    const std::function<RankFiles(int rank, std::string* buffer)>& write_rank) {
  const int threads = std::max(1, std::min(options.threads, ranks));
  std::atomic<int> next{0};
  std::atomic<bool> failed{false};
  std::mutex mu;  // guards the fields below and the progress callback
  int done = 0;
  WriteResult result;
  std::exception_ptr error;  // the first failure, rethrown as is

  auto worker = [&] {
    std::string buffer;
    buffer.reserve(size_t{1} << 20);
    for (int rank = next++; rank < ranks && !failed; rank = next++) {
      try {
        const RankFiles wrote = write_rank(rank, &buffer);
        std::lock_guard<std::mutex> lock(mu);
        result.files += wrote.files;
        result.bytes += wrote.bytes;
        ++done;
        if (options.progress) options.progress(done, ranks);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!failed.exchange(true)) error = std::current_exception();
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
  if (error) std::rethrow_exception(error);
  return result;
}

}  // namespace dsdiag::synth
