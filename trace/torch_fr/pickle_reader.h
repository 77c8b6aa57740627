// ReadPickle: the data subset of Python's pickle protocols 2–5, as a JsonValue tree — what
// PyTorch's Flight Recorder writes (torch::jit::Pickler, protocol 2: PROTO, EMPTY_DICT, MARK,
// BINUNICODE, BINPUT/BINGET, BININT*, LONG1, TUPLE2, SETITEMS, APPENDS, STOP) and what
// `pickle.dumps` makes of the same dict when a tool re-saves it (protocol 4/5: FRAME,
// SHORT_BINUNICODE, MEMOIZE, ...).
//
// It never executes anything: an opcode that would import or call (GLOBAL, STACK_GLOBAL,
// REDUCE, BUILD, NEWOBJ, INST, OBJ, EXT*, PERSID, ...) is an error, which is how a pickle of
// something other than plain data (a foreign file) is told apart. Tuples and sets become
// arrays, bytes become strings, dict keys that are not strings become their text ("3",
// "None", "True"), a later duplicate key replaces an earlier one (as in Python). Integers
// past int64 become doubles (as in trace/json_from_dom.h).
//
// Bounded: every read is checked against the end of the input, and the limits below cap the
// nesting depth, the memo and the size of the result (shared sub-objects are copied into the
// tree, so a small pickle could otherwise expand without end). A value that refers to itself
// is stopped by the depth limit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "trace/json_value.h"

namespace dsdiag::trace {

struct PickleLimits {
  size_t max_depth = 64;  // nesting of the result (dumps nest 5 deep)
  // Values built while reading, and in the result: at most this, and at most
  // kValuesFloor + kValuesPerByte per byte of input — a shared value fetched from the memo
  // with 2 bytes is copied whole into the tree (a stack frame: 7 values), so a real dump
  // stays far below that, while a pickle that doubles a value at every level stops early.
  size_t max_values = 4'000'000;
  size_t max_memo = 1'000'000;       // memo slots (BINPUT/MEMOIZE)
  size_t max_dict_members = 32'768;  // JsonValue::Set is linear: keeps a dict's build cheap
  static constexpr size_t kValuesFloor = 65'536;
  static constexpr size_t kValuesPerByte = 16;
};

struct PickleError {
  size_t offset = 0;     // byte of the opcode (or of the missing bytes) that failed
  std::string expected;  // e.g. "a supported pickle opcode"
  std::string found;     // e.g. "opcode 0x63 (GLOBAL) at byte 17"
};

// The value of the pickle at the start of `bytes` (bytes after its STOP are ignored), or
// nullopt and `*error`.
std::optional<JsonValue> ReadPickle(std::string_view bytes, PickleError* error,
                                    const PickleLimits& limits = {});

// The opcode's name as pickletools spells it ("GLOBAL"), or "" for a byte that is none.
std::string_view PickleOpcodeName(uint8_t opcode);

}  // namespace dsdiag::trace
