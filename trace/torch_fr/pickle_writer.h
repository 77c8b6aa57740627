// PickleWriter: writes the pickle subset PyTorch's Flight Recorder dumps are made of, in the
// opcodes torch::jit::Pickler uses (protocol 2): PROTO 2, EMPTY_DICT/EMPTY_LIST then MARK …
// SETITEMS/APPENDS (MARK even when empty, as torch does), BINUNICODE strings memoized by value
// (BINPUT, fetched again with BINGET), BININT1/BININT2/BININT and 8-byte LONG1 integers,
// BINFLOAT, NEWTRUE/NEWFALSE, NONE, TUPLE1-3 (a pair is TUPLE2), and a value memoized whole
// (a stack frame) fetched again, then STOP. What it writes, ReadPickle reads and Python's
// `pickle.loads` loads (tests/trace/pickle_writer_test.cc checks both).
//
// Streaming, for speed: synth writes 2,000 entries × 1,024 ranks, so values go straight into
// the caller's string with no tree in between. A dict's items are key, value, key, value …:
//
//   PickleWriter w(&out);
//   w.BeginDict();
//   w.Str("version"); w.Str("2.10");
//   w.Str("entries"); w.BeginList(); ... w.EndList();
//   w.EndDict();
//   w.Finish();
//
// Misuse (an End without its Begin, an odd number of dict items, Finish with open
// containers) is a programming error: it throws std::logic_error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "trace/json_value.h"

namespace dsdiag::trace {

class PickleWriter {
 public:
  using MemoId = uint32_t;

  // Appends to `out` (kept by pointer; it must outlive the writer), starting with PROTO 2.
  explicit PickleWriter(std::string* out);
  PickleWriter(const PickleWriter&) = delete;
  PickleWriter& operator=(const PickleWriter&) = delete;

  void BeginDict();
  void EndDict();
  void BeginList();
  void EndList();
  void BeginTuple();  // a tuple of 1-3 items is TUPLE1-3, as torch writes (name, desc)
  void EndTuple();

  // A string, memoized: a later equal string is a 2-byte BINGET. Returns its memo slot, for
  // a caller that writes the same string often to Get() without the lookup.
  MemoId Str(std::string_view s);
  void Int(int64_t v);
  void Float(double v);
  void Bool(bool v);
  void None();

  // Memoizes the value just written whole (after its End, or a scalar), so that Get(id)
  // writes it again in 2 or 5 bytes; the reader copies it back. Torch does this for frames.
  MemoId Memoize();
  void Get(MemoId id);

  // STOP. Throws std::logic_error if a container is still open.
  void Finish();

  // How many memo slots are used (strings and Memoize()d values).
  size_t memo_size() const { return next_memo_; }

 private:
  enum class Open : uint8_t { kDict, kList, kTuple };
  struct Frame {
    Open kind;
    size_t items = 0;
    size_t begin = 0;  // offset in out_ where a tuple's items start (MARK goes there if > 3)
  };
  void Put(char op) { out_->push_back(op); }
  void PutLe(uint64_t v, int bytes);
  void PutMemoRef(char short_op, char long_op, MemoId id);
  void Item();                               // one more item in the open container
  Frame Close(Open kind, const char* what);  // throws std::logic_error on a mismatch

  std::string* out_;
  std::vector<Frame> open_;
  // Memoized strings: the views point into `strings_`, whose elements never move.
  std::deque<std::string> strings_;
  std::unordered_map<std::string_view, MemoId> string_ids_;
  MemoId next_memo_ = 0;
  bool finished_ = false;
};

// A whole JsonValue tree as a protocol-2 pickle (dicts, lists, strings, ints, doubles,
// bools, null; no tuples: JSON has none), appended to `out`.
void WritePickle(const JsonValue& value, std::string* out);

}  // namespace dsdiag::trace
