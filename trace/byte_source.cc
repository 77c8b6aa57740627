#include "trace/byte_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "trace/zstd_stream.h"

namespace dsdiag::trace {
namespace {

constexpr std::string_view kCompressedSuffix = ".zst";

// An fd of the directory `dir`, opened once for the process and kept; -1 when it cannot be
// opened. A suspended reader (more ranks than open files) reopens its file at every visit:
// a name looked up in an open directory skips the walk down the path (measured with 131,072
// ranks: 1.6 -> 1.2 µs an open with the read and close).
int DirectoryFd(const std::string& dir) {
  static std::mutex lock;
  static std::map<std::string, int> fds;  // a run's traces share one or two directories
  const std::lock_guard<std::mutex> hold(lock);
  auto [it, added] = fds.try_emplace(dir, -1);
  if (added) it->second = ::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  return it->second;
}

class FdByteSource : public ByteSource {
 public:
  FdByteSource(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  ~FdByteSource() override {
    if (fd_ >= 0) ::close(fd_);
  }

  ssize_t Read(char* buffer, size_t capacity) override {
    if (!error_.empty()) {
      errno = EIO;
      return -1;
    }
    if (fd_ < 0 && !Reopen()) return -1;  // errno set
    ssize_t n;
    do {
      // A regular file is read at an offset of its own: a rewind is then no syscall, and a
      // suspended reader's visit costs an open, a pread and a close.
      n = path_.empty() ? ::read(fd_, buffer, capacity) : ::pread(fd_, buffer, capacity, offset_);
    } while (n < 0 && errno == EINTR);
    if (n > 0) offset_ += n;
    return n;
  }

  std::string error() const override { return error_; }

  bool Rewind(int64_t offset, bool close_file) override {
    if (path_.empty() || offset < 0 || !error_.empty()) return false;
    if (close_file && fd_ >= 0) {
      ::close(fd_);
      fd_ = -1;
    }
    offset_ = offset;  // the reopen waits for the next Read: a rewound rank may end unread
    return true;
  }

 private:
  // Opens the file again after a Rewind closed it: by its name in its directory's fd
  // (DirectoryFd), or by its path where that directory cannot be held open.
  bool Reopen() {
    if (name_at_ == std::string::npos) {
      const size_t slash = path_.rfind('/');
      const size_t name = slash == std::string::npos ? 0 : slash + 1;
      dir_fd_ = DirectoryFd(name == 0 ? "." : path_.substr(0, name));
      name_at_ = dir_fd_ < 0 ? 0 : name;
    }
    const char* name = path_.c_str() + name_at_;
    do {
      fd_ = dir_fd_ < 0 ? ::open(name, O_RDONLY | O_CLOEXEC)
                        : ::openat(dir_fd_, name, O_RDONLY | O_CLOEXEC);
    } while (fd_ < 0 && errno == EINTR);
    if (fd_ >= 0) return true;
    const int saved = errno;
    error_ = "cannot reopen trace " + path_ + ": " + std::strerror(saved) +
             (saved == EMFILE || saved == ENFILE ? " (raise the open-file limit, ulimit -n)" : "");
    errno = saved;
    return false;
  }

  int fd_;                  // -1 while a Rewind keeps the file closed
  const std::string path_;  // empty: not a regular file (read on, never rewound)
  off_t offset_ = 0;        // a regular file's: where the next Read starts
  // Set at the first reopen: the directory's fd (-1: none) and where the name starts in
  // path_ (0 without a directory fd: the whole path).
  int dir_fd_ = -1;
  size_t name_at_ = std::string::npos;
  std::string error_;  // once set, every Read fails
};

#ifdef DSDIAG_HAVE_ZSTD

class ZstdByteSource : public ByteSource {
 public:
  // Small: zstd keeps a partial block in a buffer of its own, and compare holds one
  // source per rank open at once.
  static constexpr size_t kInputBytes = size_t{32} << 10;

  ZstdByteSource(std::unique_ptr<ByteSource> compressed,
                 std::unique_ptr<ZstdDecompressor> decompressor)
      : compressed_(std::move(compressed)),
        decompressor_(std::move(decompressor)),
        input_(new char[kInputBytes]) {}

  ssize_t Read(char* buffer, size_t capacity) override {
    if (!error_.empty()) return Fail();
    if (capacity == 0) return 0;
    for (;;) {
      const ZstdDecompressor::Step step =
          decompressor_->Decompress(input_.get() + begin_, end_ - begin_, buffer, capacity);
      begin_ += step.consumed;
      if (!step.error.empty()) {
        error_ = "not a valid zstd stream (" + step.error + ") after " +
                 std::to_string(consumed_ + begin_) + " compressed bytes";
        // The bytes decoded before the bad spot still count; the error comes next call.
        return step.produced > 0 ? static_cast<ssize_t>(step.produced) : Fail();
      }
      if (step.produced > 0) return static_cast<ssize_t>(step.produced);
      if (begin_ < end_) continue;  // zstd took input (a header) but made no bytes yet
      if (eof_) {
        // An unfinished frame that stops between blocks is what a killed writer leaves:
        // like a plain trace cut after a whole line, not an issue. Inside a block, a
        // write came up short: like a partial last line.
        if (!step.at_block_end) tail_issue_ = "truncated compressed tail";
        return 0;
      }
      const ssize_t n = Refill();
      if (n < 0) return -1;
      if (n == 0) eof_ = true;
    }
  }

  std::string error() const override { return error_; }
  std::string_view tail_issue() const override { return tail_issue_; }

 private:
  ssize_t Fail() {
    errno = EBADMSG;
    return -1;
  }

  ssize_t Refill() {
    consumed_ += end_;
    begin_ = end_ = 0;
    const ssize_t n = compressed_->Read(input_.get(), kInputBytes);
    if (n < 0) {
      const int saved = errno;
      error_ = compressed_->error();
      if (error_.empty()) error_ = std::strerror(saved);
      errno = saved;
      return n;
    }
    end_ = static_cast<size_t>(n);
    return n;
  }

  std::unique_ptr<ByteSource> compressed_;
  std::unique_ptr<ZstdDecompressor> decompressor_;
  std::unique_ptr<char[]> input_;
  size_t begin_ = 0;     // next unread byte of input_
  size_t end_ = 0;       // one past the last byte read into input_
  size_t consumed_ = 0;  // compressed bytes before input_[0], for error messages
  bool eof_ = false;
  std::string error_;
  std::string tail_issue_;
};

#endif  // DSDIAG_HAVE_ZSTD

}  // namespace

bool IsCompressedName(std::string_view path) {
  return path.size() >= kCompressedSuffix.size() &&
         path.substr(path.size() - kCompressedSuffix.size()) == kCompressedSuffix;
}

std::unique_ptr<ByteSource> MakeFdByteSource(int fd, std::string path) {
  return std::make_unique<FdByteSource>(fd, std::move(path));
}

std::unique_ptr<ByteSource> MakeZstdByteSource(std::unique_ptr<ByteSource> compressed,
                                               std::string* error) {
#ifdef DSDIAG_HAVE_ZSTD
  auto decompressor = ZstdDecompressor::Create(error);
  if (!decompressor) return nullptr;
  return std::make_unique<ZstdByteSource>(std::move(compressed), std::move(decompressor));
#else
  (void)compressed;
  if (error) *error = "built without zstd: decompress with `zstd -d` first";
  return nullptr;
#endif
}

std::unique_ptr<ByteSource> OpenByteSource(const std::string& path, std::string* error) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (error) *error = "cannot open trace " + path + ": " + std::strerror(errno);
    return nullptr;
  }
  struct stat st {};
  const bool stated = ::fstat(fd, &st) == 0;
  if (stated && S_ISDIR(st.st_mode)) {
    ::close(fd);
    if (error) *error = "cannot read trace " + path + ": it is a directory";
    return nullptr;
  }
  // Only a regular file can be rewound (a suspended reader reopens it by name).
  if (!IsCompressedName(path))
    return MakeFdByteSource(fd, stated && S_ISREG(st.st_mode) ? path : "");
  auto plain = MakeFdByteSource(fd);
  std::string why;
  auto decoded = MakeZstdByteSource(std::move(plain), &why);
  if (!decoded && error) *error = "cannot read trace " + path + ": " + why;
  return decoded;
}

}  // namespace dsdiag::trace
