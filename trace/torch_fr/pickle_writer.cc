#include "trace/torch_fr/pickle_writer.h"

#include <cstring>
#include <stdexcept>

namespace dsdiag::trace {
namespace {

// The opcodes written (pickletools' names).
constexpr char kProto = '\x80';
constexpr char kEmptyDict = '}';
constexpr char kEmptyList = ']';
constexpr char kEmptyTuple = ')';
constexpr char kMark = '(';
constexpr char kSetItems = 'u';
constexpr char kAppends = 'e';
constexpr char kTuple = 't';
constexpr char kTuple1 = '\x85';
constexpr char kTuple2 = '\x86';
constexpr char kTuple3 = '\x87';
constexpr char kBinUnicode = 'X';
constexpr char kBinPut = 'q';
constexpr char kLongBinPut = 'r';
constexpr char kBinGet = 'h';
constexpr char kLongBinGet = 'j';
constexpr char kBinInt1 = 'K';
constexpr char kBinInt2 = 'M';
constexpr char kBinInt = 'J';
constexpr char kLong1 = '\x8a';
constexpr char kBinFloat = 'G';
constexpr char kNewTrue = '\x88';
constexpr char kNewFalse = '\x89';
constexpr char kNone = 'N';
constexpr char kStop = '.';

}  // namespace

PickleWriter::PickleWriter(std::string* out) : out_(out) {
  Put(kProto);
  Put('\x02');
}

void PickleWriter::PutLe(uint64_t v, int bytes) {
  char b[8];
  for (int i = 0; i < bytes; ++i) b[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  out_->append(b, static_cast<size_t>(bytes));
}

void PickleWriter::PutMemoRef(char short_op, char long_op, MemoId id) {
  if (id < 256) {
    Put(short_op);
    Put(static_cast<char>(id));
  } else {
    Put(long_op);
    PutLe(id, 4);
  }
}

void PickleWriter::Item() {
  if (finished_) throw std::logic_error("PickleWriter: a value after Finish()");
  if (!open_.empty()) ++open_.back().items;
}

void PickleWriter::BeginDict() {
  Item();
  Put(kEmptyDict);
  Put(kMark);
  open_.push_back({Open::kDict});
}

void PickleWriter::BeginList() {
  Item();
  Put(kEmptyList);
  Put(kMark);
  open_.push_back({Open::kList});
}

// The item count decides the opcode, and is known only at the end: the MARK a long tuple
// needs is inserted then.
void PickleWriter::BeginTuple() {
  Item();
  open_.push_back({Open::kTuple, 0, out_->size()});
}

PickleWriter::Frame PickleWriter::Close(Open kind, const char* what) {
  if (open_.empty() || open_.back().kind != kind) {
    throw std::logic_error(std::string("PickleWriter: ") + what + " without its Begin");
  }
  if (kind == Open::kDict && open_.back().items % 2 != 0) {
    throw std::logic_error("PickleWriter: a dict key without its value");
  }
  const Frame frame = open_.back();
  open_.pop_back();
  return frame;
}

void PickleWriter::EndDict() {
  Close(Open::kDict, "EndDict");
  Put(kSetItems);
}

void PickleWriter::EndList() {
  Close(Open::kList, "EndList");
  Put(kAppends);
}

void PickleWriter::EndTuple() {
  const Frame frame = Close(Open::kTuple, "EndTuple");
  switch (frame.items) {
    case 0:
      Put(kEmptyTuple);
      break;
    case 1:
      Put(kTuple1);
      break;
    case 2:
      Put(kTuple2);
      break;
    case 3:
      Put(kTuple3);
      break;
    default:
      out_->insert(out_->begin() + static_cast<std::ptrdiff_t>(frame.begin), kMark);
      Put(kTuple);
  }
}

PickleWriter::MemoId PickleWriter::Str(std::string_view s) {
  Item();
  const auto it = string_ids_.find(s);
  if (it != string_ids_.end()) {
    PutMemoRef(kBinGet, kLongBinGet, it->second);
    return it->second;
  }
  Put(kBinUnicode);
  PutLe(s.size(), 4);
  out_->append(s.data(), s.size());
  const MemoId id = next_memo_++;
  PutMemoRef(kBinPut, kLongBinPut, id);
  string_ids_.emplace(strings_.emplace_back(s), id);
  return id;
}

// Torch's Pickler: the smallest of BININT1, BININT2, BININT, else LONG1 with 8 bytes.
void PickleWriter::Int(int64_t v) {
  Item();
  if (v >= 0 && v <= 0xff) {
    Put(kBinInt1);
    PutLe(static_cast<uint64_t>(v), 1);
  } else if (v >= 0 && v <= 0xffff) {
    Put(kBinInt2);
    PutLe(static_cast<uint64_t>(v), 2);
  } else if (v >= INT32_MIN && v <= INT32_MAX) {
    Put(kBinInt);
    PutLe(static_cast<uint64_t>(v), 4);
  } else {
    Put(kLong1);
    Put('\x08');
    PutLe(static_cast<uint64_t>(v), 8);  // two's complement, little-endian
  }
}

// BINFLOAT: 8 bytes of the IEEE double, big-endian.
void PickleWriter::Float(double v) {
  Item();
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  Put(kBinFloat);
  for (int i = 7; i >= 0; --i) Put(static_cast<char>((bits >> (8 * i)) & 0xff));
}

void PickleWriter::Bool(bool v) {
  Item();
  Put(v ? kNewTrue : kNewFalse);
}

void PickleWriter::None() {
  Item();
  Put(kNone);
}

PickleWriter::MemoId PickleWriter::Memoize() {
  const MemoId id = next_memo_++;
  PutMemoRef(kBinPut, kLongBinPut, id);
  return id;
}

void PickleWriter::Get(MemoId id) {
  if (id >= next_memo_) throw std::logic_error("PickleWriter: Get of a memo slot never put");
  Item();
  PutMemoRef(kBinGet, kLongBinGet, id);
}

void PickleWriter::Finish() {
  if (!open_.empty()) throw std::logic_error("PickleWriter: Finish() with a container open");
  if (finished_) throw std::logic_error("PickleWriter: Finish() twice");
  Put(kStop);
  finished_ = true;
}

namespace {

void WriteValue(const JsonValue& v, PickleWriter* w) {
  switch (v.kind()) {
    case JsonValue::Kind::kNull:
      w->None();
      break;
    case JsonValue::Kind::kBool:
      w->Bool(v.as_bool());
      break;
    case JsonValue::Kind::kInt:
      w->Int(v.as_int());
      break;
    case JsonValue::Kind::kDouble:
      w->Float(v.as_double());
      break;
    case JsonValue::Kind::kString:
      w->Str(v.as_string());
      break;
    case JsonValue::Kind::kArray:
      w->BeginList();
      for (const JsonValue& e : v.elements()) WriteValue(e, w);
      w->EndList();
      break;
    case JsonValue::Kind::kObject:
      w->BeginDict();
      for (const auto& m : v.members()) {
        w->Str(m.first);
        WriteValue(m.second, w);
      }
      w->EndDict();
      break;
  }
}

}  // namespace

void WritePickle(const JsonValue& value, std::string* out) {
  PickleWriter w(out);
  WriteValue(value, &w);
  w.Finish();
}

}  // namespace dsdiag::trace
