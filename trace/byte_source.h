// ByteSource: where the line reader gets a trace's bytes from — a plain file, or a
// zstd-compressed one (`rank-<R>.jsonl.zst`) decoded on the fly, so that every reader
// of traces handles both without knowing which.
//
//   std::string error;
//   auto source = OpenByteSource("run/rank-00000.jsonl.zst", &error);
//   while ((n = source->Read(buf, sizeof buf)) > 0) ...
//   if (n == 0 && !source->tail_issue().empty()) ...  // a write that came up short
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace dsdiag::trace {

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Up to `capacity` bytes into `buffer`: the count, 0 at the end, or -1 on an error
  // (errno set; error() says more). After an error every call returns -1.
  virtual ssize_t Read(char* buffer, size_t capacity) = 0;
  // Why Read failed, in words; empty for a plain read error (then strerror(errno) says it).
  virtual std::string error() const { return {}; }
  // Non-empty once Read has returned 0 when the data ended inside a compressed block
  // ("truncated compressed tail": a write came up short, the counterpart of a partial
  // last line); what came before it was delivered whole. A frame that simply stops
  // between blocks (a killed writer) is no issue, like a plain trace cut after a line.
  virtual std::string_view tail_issue() const { return {}; }
  // Makes the next Read start at byte `offset` of the file, closing the file until then when
  // `close_file` (it is reopened by its path): how a suspended reader (trace/reader_pool.h)
  // gives its place back. False, and nothing changed, for a source that cannot seek (a
  // compressed trace: zstd decodes from the frame's start only; a pipe).
  virtual bool Rewind(int64_t /*offset*/, bool /*close_file*/) { return false; }
};

// "….zst": the name of a compressed trace.
bool IsCompressedName(std::string_view path);

// Opens `path`, decoding it when its name ends in ".zst". Null and *error when it cannot
// be opened, is a directory, or is compressed in a build without libzstd.
std::unique_ptr<ByteSource> OpenByteSource(const std::string& path, std::string* error);

// Reads an open file descriptor; takes ownership of `fd`. With the file's `path` (a regular
// file, `fd` at its start) it reads at offsets of its own and can Rewind, closing and
// reopening the file; without, it reads on and cannot.
std::unique_ptr<ByteSource> MakeFdByteSource(int fd, std::string path = {});

// Decodes the zstd stream that `compressed` yields. Null and *error without libzstd.
std::unique_ptr<ByteSource> MakeZstdByteSource(std::unique_ptr<ByteSource> compressed,
                                               std::string* error);

}  // namespace dsdiag::trace
