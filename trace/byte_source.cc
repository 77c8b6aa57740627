#include "trace/byte_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "trace/zstd_stream.h"

namespace dsdiag::trace {
namespace {

constexpr std::string_view kCompressedSuffix = ".zst";

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
    if (resume_at_ >= 0 && !Reposition()) return -1;  // errno set
    ssize_t n;
    do {
      n = ::read(fd_, buffer, capacity);
    } while (n < 0 && errno == EINTR);
    return n;
  }

  std::string error() const override { return error_; }

  bool Rewind(int64_t offset, bool close_file) override {
    if (path_.empty() || offset < 0 || !error_.empty()) return false;
    if (close_file && fd_ >= 0) {
      ::close(fd_);
      fd_ = -1;
    }
    resume_at_ = offset;  // the seek waits for the next Read: a rewound rank may end unread
    return true;
  }

 private:
  // Reopens the file if it was closed, and seeks to where the next Read starts.
  bool Reposition() {
    if (fd_ < 0) {
      do {
        fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
      } while (fd_ < 0 && errno == EINTR);
      if (fd_ < 0) {
        const int saved = errno;
        error_ =
            "cannot reopen trace " + path_ + ": " + std::strerror(saved) +
            (saved == EMFILE || saved == ENFILE ? " (raise the open-file limit, ulimit -n)" : "");
        errno = saved;
        return false;
      }
    }
    if (::lseek(fd_, static_cast<off_t>(resume_at_), SEEK_SET) < 0) {
      const int saved = errno;
      error_ = "cannot seek in trace " + path_ + ": " + std::strerror(saved);
      errno = saved;
      return false;
    }
    resume_at_ = -1;
    return true;
  }

  int fd_;
  const std::string path_;
  int64_t resume_at_ = -1;  // >= 0: the offset the next Read starts at
  std::string error_;       // once set, every Read fails
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
