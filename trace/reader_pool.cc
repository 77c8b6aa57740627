#include "trace/reader_pool.h"

#include <simdjson.h>

#include <utility>

#include "trace/field_index.h"

namespace dsdiag::trace {

ReaderPool::ReaderPool() = default;
ReaderPool::~ReaderPool() = default;

LineReader::Buffer ReaderPool::TakeBuffer() {
  if (buffers_.empty()) return {};
  LineReader::Buffer buffer = std::move(buffers_.back());
  buffers_.pop_back();
  return buffer;
}

void ReaderPool::GiveBuffer(LineReader::Buffer buffer) {
  if (!buffer.bytes || buffers_.size() >= kMaxSpare || buffer.capacity > kMaxSpareBytes) return;
  buffers_.push_back(std::move(buffer));
}

std::unique_ptr<simdjson::dom::parser> ReaderPool::TakeParser() {
  if (parsers_.empty()) return nullptr;
  std::unique_ptr<simdjson::dom::parser> parser = std::move(parsers_.back());
  parsers_.pop_back();
  return parser;
}

void ReaderPool::GiveParser(std::unique_ptr<simdjson::dom::parser> parser) {
  if (!parser || parsers_.size() >= kMaxSpare || parser->capacity() > kMaxSpareBytes) return;
  parsers_.push_back(std::move(parser));
}

std::unique_ptr<FieldIndex> ReaderPool::TakeFields() {
  if (fields_.empty()) return nullptr;
  std::unique_ptr<FieldIndex> fields = std::move(fields_.back());
  fields_.pop_back();
  return fields;
}

void ReaderPool::GiveFields(std::unique_ptr<FieldIndex> fields) {
  if (fields && fields_.size() < kMaxSpare) fields_.push_back(std::move(fields));
}

}  // namespace dsdiag::trace
