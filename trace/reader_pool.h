// ReaderPool: the buffers that suspended TraceReaders lend each other.
//
// A reader holds a line buffer (LineReader's 32 KiB chunk), a simdjson parser (its
// structural index, tape and strings) and the index of its record's fields: ~70 KB. A step driver
// with 16,384 ranks open would hold 1.1 GB of them, though it reads one rank at a time. So between
// visits a reader gives both back (TraceReader::Suspend) and the next reader resumed takes them
// (TraceReader::Resume): the buffers in use are those of the readers being read, not of
// those open.
//
// Not thread-safe: one pool per thread that reads.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "trace/line_reader.h"

namespace simdjson::dom {
class parser;
}  // namespace simdjson::dom

namespace dsdiag::trace {

class FieldIndex;

class ReaderPool {
 public:
  ReaderPool();
  ~ReaderPool();
  ReaderPool(const ReaderPool&) = delete;
  ReaderPool& operator=(const ReaderPool&) = delete;

  // A spare buffer, or an empty one (bytes null) when none is left.
  LineReader::Buffer TakeBuffer();
  // Keeps `buffer` for the next reader, unless enough are spare or it grew large (a long
  // line): then it is freed.
  void GiveBuffer(LineReader::Buffer buffer);
  // A spare parser, or null when none is left.
  std::unique_ptr<simdjson::dom::parser> TakeParser();
  void GiveParser(std::unique_ptr<simdjson::dom::parser> parser);
  // A spare index of a record's fields (trace/field_index.h), or null when none is left.
  std::unique_ptr<FieldIndex> TakeFields();
  void GiveFields(std::unique_ptr<FieldIndex> fields);

  size_t spare_buffers() const { return buffers_.size(); }
  size_t spare_parsers() const { return parsers_.size(); }

  // More spares than this are freed: a serial driver needs one, a few cost little.
  static constexpr size_t kMaxSpare = 4;
  // Buffers and parsers grown past this by one long line are freed rather than kept.
  static constexpr size_t kMaxSpareBytes = size_t{1} << 20;

 private:
  std::vector<LineReader::Buffer> buffers_;
  std::vector<std::unique_ptr<simdjson::dom::parser>> parsers_;
  std::vector<std::unique_ptr<FieldIndex>> fields_;
};

}  // namespace dsdiag::trace
