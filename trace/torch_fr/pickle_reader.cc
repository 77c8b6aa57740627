#include "trace/torch_fr/pickle_reader.h"

#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <unordered_map>
#include <utility>
#include <vector>

namespace dsdiag::trace {
namespace {

// The opcodes, as Lib/pickle.py names them. Only those of the data subset are handled; the
// rest are listed so that an error can name what it met.
enum Op : uint8_t {
  kMark = '(',
  kStop = '.',
  kPop = '0',
  kPopMark = '1',
  kDup = '2',
  kFloat = 'F',
  kInt = 'I',
  kBinInt = 'J',
  kBinInt1 = 'K',
  kLong = 'L',
  kBinInt2 = 'M',
  kNone = 'N',
  kPersId = 'P',
  kBinPersId = 'Q',
  kReduce = 'R',
  kString = 'S',
  kBinString = 'T',
  kShortBinString = 'U',
  kUnicode = 'V',
  kBinUnicode = 'X',
  kAppend = 'a',
  kBuild = 'b',
  kGlobal = 'c',
  kDict = 'd',
  kEmptyDict = '}',
  kAppends = 'e',
  kGet = 'g',
  kBinGet = 'h',
  kInst = 'i',
  kLongBinGet = 'j',
  kList = 'l',
  kEmptyList = ']',
  kObj = 'o',
  kPut = 'p',
  kBinPut = 'q',
  kLongBinPut = 'r',
  kSetItem = 's',
  kTuple = 't',
  kEmptyTuple = ')',
  kSetItems = 'u',
  kBinFloat = 'G',
  kProto = 0x80,
  kNewObj = 0x81,
  kExt1 = 0x82,
  kExt2 = 0x83,
  kExt4 = 0x84,
  kTuple1 = 0x85,
  kTuple2 = 0x86,
  kTuple3 = 0x87,
  kNewTrue = 0x88,
  kNewFalse = 0x89,
  kLong1 = 0x8a,
  kLong4 = 0x8b,
  kBinBytes = 'B',
  kShortBinBytes = 'C',
  kShortBinUnicode = 0x8c,
  kBinUnicode8 = 0x8d,
  kBinBytes8 = 0x8e,
  kEmptySet = 0x8f,
  kAddItems = 0x90,
  kFrozenSet = 0x91,
  kNewObjEx = 0x92,
  kStackGlobal = 0x93,
  kMemoize = 0x94,
  kFrame = 0x95,
  kByteArray8 = 0x96,
  kNextBuffer = 0x97,
  kReadonlyBuffer = 0x98,
};

constexpr uint8_t kHighestProtocol = 5;
// An integer of more bytes than this is no count or time; refusing it keeps LONG4 cheap.
constexpr size_t kMaxLongBytes = 64;

std::string Hex(uint8_t b) {
  static constexpr char kDigits[] = "0123456789abcdef";
  return std::string("0x") + kDigits[b >> 4] + kDigits[b & 15];
}

std::string AtByte(size_t offset) { return " at byte " + std::to_string(offset); }

// One value under construction. Containers hold the ids of their elements (a dict: key,
// value, key, value, ...), so that a container memoized while still empty (Python's pickle
// memoizes before filling) is seen filled wherever it is fetched again.
struct Node {
  enum class Kind : uint8_t { kScalar, kList, kTuple, kDict, kSet };
  Kind kind = Kind::kScalar;
  JsonValue scalar;
  std::vector<uint32_t> items;
};

class Unpickler {
 public:
  Unpickler(std::string_view in, const PickleLimits& limits, PickleError* error)
      : in_(in), limits_(limits), error_(error) {}

  std::optional<JsonValue> Run() {
    while (true) {
      if (pos_ >= in_.size()) {
        Fail(pos_, "a pickle opcode (the pickle ends without STOP)", "end of file" + AtByte(pos_));
        return std::nullopt;
      }
      op_at_ = pos_;
      const uint8_t op = static_cast<uint8_t>(in_[pos_++]);
      if (op == kStop) return Finish();
      if (!Step(op)) return std::nullopt;
    }
  }

 private:
  // ---- errors ----

  bool Fail(size_t offset, std::string expected, std::string found) {
    if (error_ && !failed_) *error_ = {offset, std::move(expected), std::move(found)};
    failed_ = true;
    return false;
  }

  std::string OpName(uint8_t op) const {
    const std::string_view name = PickleOpcodeName(op);
    return "opcode " + Hex(op) + (name.empty() ? "" : " (" + std::string(name) + ")");
  }

  // What the current opcode needed from the stack and did not find.
  bool FailStack(uint8_t op, std::string expected) {
    return Fail(op_at_, std::move(expected) + " for " + std::string(PickleOpcodeName(op)),
                "a stack that has none" + AtByte(op_at_));
  }

  // ---- input ----

  bool Take(size_t n, uint8_t op, const char** out) {
    if (in_.size() - pos_ < n) {
      return Fail(
          pos_,
          std::to_string(n) + " bytes of the " + std::string(PickleOpcodeName(op)) + " argument",
          std::to_string(in_.size() - pos_) + " before the end of file" + AtByte(pos_));
    }
    *out = in_.data() + pos_;
    pos_ += n;
    return true;
  }

  // A little-endian unsigned argument of `n` bytes (1, 2, 4 or 8).
  bool TakeUnsigned(size_t n, uint8_t op, uint64_t* out) {
    const char* p = nullptr;
    if (!Take(n, op, &p)) return false;
    uint64_t v = 0;
    for (size_t i = n; i-- > 0;) v = (v << 8) | static_cast<uint8_t>(p[i]);
    *out = v;
    return true;
  }

  // ---- the stack, the marks and the memo ----

  // Values pushed since the innermost MARK: Python moves the stack aside at a MARK, so an
  // opcode never reaches below it.
  size_t Avail() const { return stack_.size() - (marks_.empty() ? 0 : marks_.back()); }

  bool NewNode(Node node, uint32_t* id) {
    if (nodes_.size() >= limits_.max_values) {
      return Fail(op_at_, "a pickle of at most " + std::to_string(limits_.max_values) + " values",
                  "more" + AtByte(op_at_));
    }
    *id = static_cast<uint32_t>(nodes_.size());
    nodes_.push_back(std::move(node));
    return true;
  }

  bool Push(uint32_t id) {
    if (stack_.size() >= limits_.max_values) {
      return Fail(op_at_, "a pickle stack of at most " + std::to_string(limits_.max_values),
                  "more" + AtByte(op_at_));
    }
    stack_.push_back(id);
    return true;
  }

  bool PushScalar(JsonValue v) {
    uint32_t id = 0;
    Node node;
    node.scalar = std::move(v);
    return NewNode(std::move(node), &id) && Push(id);
  }

  bool PushContainer(Node::Kind kind, std::vector<uint32_t> items = {}) {
    uint32_t id = 0;
    Node node;
    node.kind = kind;
    node.items = std::move(items);
    return NewNode(std::move(node), &id) && Push(id);
  }

  // Pops the innermost MARK and the values above it.
  bool PopMark(uint8_t op, std::vector<uint32_t>* items) {
    if (marks_.empty()) return FailStack(op, "a MARK");
    const size_t mark = marks_.back();
    marks_.pop_back();
    if (items) items->assign(stack_.begin() + static_cast<std::ptrdiff_t>(mark), stack_.end());
    stack_.resize(mark);
    return true;
  }

  bool PopN(uint8_t op, size_t n, std::vector<uint32_t>* items) {
    if (Avail() < n) return FailStack(op, std::to_string(n) + " values");
    items->assign(stack_.end() - static_cast<std::ptrdiff_t>(n), stack_.end());
    stack_.resize(stack_.size() - n);
    return true;
  }

  // The container a MARK-less or MARK-based fill opcode adds to, checked for its kind.
  bool Target(uint8_t op, size_t below_top, Node::Kind kind, const char* what, Node** out) {
    if (Avail() < below_top + 1) return FailStack(op, std::string("a ") + what);
    Node& n = nodes_[stack_[stack_.size() - 1 - below_top]];
    if (n.kind != kind) {
      return Fail(op_at_, std::string("a ") + what + " for " + std::string(PickleOpcodeName(op)),
                  "another value" + AtByte(op_at_));
    }
    *out = &n;
    return true;
  }

  bool Memoize(uint8_t op, uint64_t key) {
    if (Avail() < 1) return FailStack(op, "a value to memoize");
    if (memo_.size() >= limits_.max_memo && memo_.find(key) == memo_.end()) {
      return Fail(op_at_, "a memo of at most " + std::to_string(limits_.max_memo) + " entries",
                  "more" + AtByte(op_at_));
    }
    memo_[key] = stack_.back();
    return true;
  }

  bool Fetch(uint64_t key) {
    const auto it = memo_.find(key);
    if (it == memo_.end()) {
      return Fail(op_at_, "a memo entry that was stored before",
                  "memo key " + std::to_string(key) + AtByte(op_at_));
    }
    return Push(it->second);
  }

  // ---- values ----

  bool PushText(uint8_t op, size_t n, bool is_unicode) {
    const char* p = nullptr;
    if (!Take(n, op, &p)) return false;
    std::string_view text(p, n);
    if (simdjson::validate_utf8(p, n)) return PushScalar(JsonValue(text));
    // Python refuses such str; bytes may hold anything: keep their text readable.
    if (is_unicode) return Fail(op_at_, "UTF-8 text", "invalid UTF-8" + AtByte(op_at_));
    std::string escaped;
    for (const char c : text) {
      const auto u = static_cast<uint8_t>(c);
      if (u < 0x80) {
        escaped += c;
      } else {
        escaped += "\\x" + Hex(u).substr(2);
      }
    }
    return PushScalar(JsonValue(std::move(escaped)));
  }

  bool PushSizedText(uint8_t op, size_t size_bytes, bool is_unicode) {
    uint64_t n = 0;
    if (!TakeUnsigned(size_bytes, op, &n)) return false;
    if (n > in_.size() - pos_) {
      return Fail(pos_, std::to_string(n) + " bytes of " + std::string(PickleOpcodeName(op)),
                  std::to_string(in_.size() - pos_) + " before the end of file" + AtByte(pos_));
    }
    return PushText(op, static_cast<size_t>(n), is_unicode);
  }

  // LONG1/LONG4: a little-endian two's-complement integer of `n` bytes.
  bool PushLong(uint8_t op, size_t n) {
    if (n > kMaxLongBytes) {
      return Fail(op_at_, "an integer of at most " + std::to_string(kMaxLongBytes) + " bytes",
                  std::to_string(n) + " bytes" + AtByte(op_at_));
    }
    const char* p = nullptr;
    if (!Take(n, op, &p)) return false;
    if (n == 0) return PushScalar(JsonValue(int64_t{0}));
    const auto byte = [p](size_t i) { return static_cast<uint8_t>(p[i]); };
    const bool negative = (byte(n - 1) & 0x80) != 0;
    const uint8_t fill = negative ? 0xff : 0x00;
    bool fits = true;  // the bytes past the eighth only repeat the sign
    for (size_t i = 8; i < n; ++i) fits = fits && byte(i) == fill;
    if (fits && n > 8) fits = ((byte(7) & 0x80) != 0) == negative;
    if (fits) {
      uint64_t v = negative ? ~uint64_t{0} : 0;
      for (size_t i = std::min<size_t>(n, 8); i-- > 0;) {
        v = (v << 8) | byte(i);
      }
      return PushScalar(JsonValue(static_cast<int64_t>(v)));
    }
    // Past int64: the magnitude as a double (invert and add one for a negative).
    double magnitude = 0;
    for (size_t i = n; i-- > 0;) {
      magnitude = magnitude * 256 + (negative ? static_cast<uint8_t>(~byte(i)) : byte(i));
    }
    return PushScalar(JsonValue(negative ? -(magnitude + 1) : magnitude));
  }

  bool PushBinFloat(uint8_t op) {
    const char* p = nullptr;
    if (!Take(8, op, &p)) return false;
    uint64_t bits = 0;
    for (size_t i = 0; i < 8; ++i) bits = (bits << 8) | static_cast<uint8_t>(p[i]);  // big-endian
    double v = 0;
    std::memcpy(&v, &bits, sizeof v);
    return PushScalar(JsonValue(v));
  }

  bool PushInt(uint8_t op, size_t n, bool is_signed) {
    uint64_t v = 0;
    if (!TakeUnsigned(n, op, &v)) return false;
    if (is_signed) return PushScalar(JsonValue(int64_t{static_cast<int32_t>(v)}));
    return PushScalar(JsonValue(static_cast<int64_t>(v)));
  }

  // ---- one opcode ----

  bool Step(uint8_t op) {
    switch (op) {
      case kProto: {
        uint64_t v = 0;
        if (!TakeUnsigned(1, op, &v)) return false;
        if (v > kHighestProtocol) {
          return Fail(op_at_, "pickle protocol 2 to 5",
                      "protocol " + std::to_string(v) + AtByte(op_at_));
        }
        return true;
      }
      case kFrame: {  // a length hint for buffered readers; the frame must be all there
        uint64_t n = 0;
        if (!TakeUnsigned(8, op, &n)) return false;
        if (n > in_.size() - pos_) {
          return Fail(pos_, "a frame of " + std::to_string(n) + " bytes",
                      std::to_string(in_.size() - pos_) + " before the end of file" + AtByte(pos_));
        }
        return true;
      }
      case kNone:
        return PushScalar(JsonValue());
      case kNewTrue:
        return PushScalar(JsonValue(true));
      case kNewFalse:
        return PushScalar(JsonValue(false));
      case kBinInt:
        return PushInt(op, 4, true);
      case kBinInt1:
        return PushInt(op, 1, false);
      case kBinInt2:
        return PushInt(op, 2, false);
      case kLong1: {
        uint64_t n = 0;
        return TakeUnsigned(1, op, &n) && PushLong(op, static_cast<size_t>(n));
      }
      case kLong4: {
        uint64_t n = 0;
        if (!TakeUnsigned(4, op, &n)) return false;
        if (n & 0x80000000u)
          return Fail(op_at_, "a LONG4 length >= 0", "a negative one" + AtByte(op_at_));
        return PushLong(op, static_cast<size_t>(n));
      }
      case kBinFloat:
        return PushBinFloat(op);
      case kShortBinUnicode:
        return PushSizedText(op, 1, true);
      case kBinUnicode:
        return PushSizedText(op, 4, true);
      case kBinUnicode8:
        return PushSizedText(op, 8, true);
      case kShortBinString:
      case kShortBinBytes:
        return PushSizedText(op, 1, false);
      case kBinString:
      case kBinBytes:
        return PushSizedText(op, 4, false);
      case kBinBytes8:
      case kByteArray8:
        return PushSizedText(op, 8, false);
      case kEmptyDict:
        return PushContainer(Node::Kind::kDict);
      case kEmptyList:
        return PushContainer(Node::Kind::kList);
      case kEmptyTuple:
        return PushContainer(Node::Kind::kTuple);
      case kEmptySet:
        return PushContainer(Node::Kind::kSet);
      case kMark:
        marks_.push_back(stack_.size());
        return true;
      default:
        return StepStructure(op);
    }
  }

  // The opcodes that rearrange the stack, fill containers or use the memo.
  bool StepStructure(uint8_t op) {
    std::vector<uint32_t> items;
    switch (op) {
      case kTuple1:
      case kTuple2:
      case kTuple3:
        return PopN(op, op - kTuple1 + 1, &items) &&
               PushContainer(Node::Kind::kTuple, std::move(items));
      case kTuple:
        return PopMark(op, &items) && PushContainer(Node::Kind::kTuple, std::move(items));
      case kList:
        return PopMark(op, &items) && PushContainer(Node::Kind::kList, std::move(items));
      case kFrozenSet:
        return PopMark(op, &items) && PushContainer(Node::Kind::kSet, std::move(items));
      case kDict:
        if (!PopMark(op, &items)) return false;
        if (items.size() % 2 != 0)
          return Fail(op_at_, "key, value pairs for DICT", "an odd count" + AtByte(op_at_));
        return PushContainer(Node::Kind::kDict, std::move(items));
      case kAppend:
      case kSetItem: {
        const bool is_dict = op == kSetItem;
        const size_t n = is_dict ? 2 : 1;
        Node* target = nullptr;
        if (!Target(op, n, is_dict ? Node::Kind::kDict : Node::Kind::kList,
                    is_dict ? "dict" : "list", &target) ||
            !PopN(op, n, &items)) {
          return false;
        }
        return AddItems(op, target, items);
      }
      case kAppends:
      case kSetItems:
      case kAddItems:
        return StepFillFromMark(op);
      case kPop:
        if (Avail() < 1) return FailStack(op, "a value");
        stack_.pop_back();
        return true;
      case kPopMark:
        return PopMark(op, nullptr);
      case kDup:
        if (Avail() < 1) return FailStack(op, "a value");
        return Push(stack_.back());
      case kBinPut:
      case kLongBinPut: {
        uint64_t key = 0;
        return TakeUnsigned(op == kBinPut ? 1 : 4, op, &key) && Memoize(op, key);
      }
      case kMemoize:
        return Memoize(op, memo_.size());
      case kBinGet:
      case kLongBinGet: {
        uint64_t key = 0;
        return TakeUnsigned(op == kBinGet ? 1 : 4, op, &key) && Fetch(key);
      }
      default:
        return Fail(op_at_, "a data opcode of pickle protocol 2 to 5 (no imports, no calls)",
                    "unsupported pickle " + OpName(op) + AtByte(op_at_));
    }
  }

  // APPENDS, SETITEMS, ADDITEMS: the values above the innermost MARK go into the container
  // just below it.
  bool StepFillFromMark(uint8_t op) {
    if (marks_.empty()) return FailStack(op, "a MARK");
    const bool is_dict = op == kSetItems;
    const Node::Kind kind =
        is_dict ? Node::Kind::kDict : (op == kAddItems ? Node::Kind::kSet : Node::Kind::kList);
    const char* what = is_dict ? "dict" : (op == kAddItems ? "set" : "list");
    const size_t mark = marks_.back();
    const size_t floor = marks_.size() > 1 ? marks_[marks_.size() - 2] : 0;
    if (mark <= floor) return FailStack(op, std::string("a ") + what + " below the MARK");
    Node& target = nodes_[stack_[mark - 1]];
    if (target.kind != kind) {
      return Fail(op_at_, std::string("a ") + what + " for " + std::string(PickleOpcodeName(op)),
                  "another value" + AtByte(op_at_));
    }
    std::vector<uint32_t> items;
    if (!PopMark(op, &items)) return false;
    if (is_dict && items.size() % 2 != 0) {
      return Fail(op_at_, "key, value pairs for SETITEMS", "an odd count" + AtByte(op_at_));
    }
    return AddItems(op, &target, items);
  }

  bool AddItems(uint8_t op, Node* target, const std::vector<uint32_t>& items) {
    if (target->items.size() + items.size() > limits_.max_values) {
      return Fail(op_at_,
                  "a container of at most " + std::to_string(limits_.max_values) + " values",
                  "more for " + std::string(PickleOpcodeName(op)) + AtByte(op_at_));
    }
    target->items.insert(target->items.end(), items.begin(), items.end());
    return true;
  }

  // ---- the result ----

  std::optional<JsonValue> Finish() {
    if (!marks_.empty() || stack_.size() != 1) {
      Fail(op_at_, "one value and no open MARK at STOP",
           std::to_string(stack_.size()) + " values and " + std::to_string(marks_.size()) +
               " open MARKs" + AtByte(op_at_));
      return std::nullopt;
    }
    JsonValue out;
    if (!Convert(stack_.back(), 0, &out)) return std::nullopt;
    return out;
  }

  bool CountValue() {
    if (++values_out_ <= limits_.max_values) return true;
    return Fail(op_at_, "a result of at most " + std::to_string(limits_.max_values) + " values",
                "more (shared values repeat in the tree)" + AtByte(op_at_));
  }

  bool Convert(uint32_t id, size_t depth, JsonValue* out) {
    if (depth > limits_.max_depth) {
      return Fail(op_at_, "values nested at most " + std::to_string(limits_.max_depth) + " deep",
                  "deeper (or a value that contains itself)" + AtByte(op_at_));
    }
    if (!CountValue()) return false;
    const Node& node = nodes_[id];
    switch (node.kind) {
      case Node::Kind::kScalar:
        *out = node.scalar;
        return true;
      case Node::Kind::kDict:
        return ConvertDict(node, depth, out);
      default:
        break;
    }
    *out = JsonValue::Array();
    for (const uint32_t item : node.items) {
      JsonValue v;
      if (!Convert(item, depth + 1, &v)) return false;
      out->Push(std::move(v));
    }
    return true;
  }

  bool ConvertDict(const Node& node, size_t depth, JsonValue* out) {
    *out = JsonValue::Object();
    for (size_t i = 0; i + 1 < node.items.size(); i += 2) {
      JsonValue key;
      JsonValue value;
      if (!Convert(node.items[i], depth + 1, &key) ||
          !Convert(node.items[i + 1], depth + 1, &value)) {
        return false;
      }
      if (out->members().size() >= limits_.max_dict_members) {
        return Fail(op_at_,
                    "a dict of at most " + std::to_string(limits_.max_dict_members) + " keys",
                    "more" + AtByte(op_at_));
      }
      out->Set(KeyText(key), std::move(value));
    }
    return true;
  }

  // A key's text as Python's str() would mostly spell it.
  static std::string KeyText(const JsonValue& key) {
    switch (key.kind()) {
      case JsonValue::Kind::kString:
        return key.as_string();
      case JsonValue::Kind::kNull:
        return "None";
      case JsonValue::Kind::kBool:
        return key.as_bool() ? "True" : "False";
      default:
        return key.ToJson();
    }
  }

  std::string_view in_;
  const PickleLimits& limits_;
  PickleError* error_;
  bool failed_ = false;
  size_t pos_ = 0;
  size_t op_at_ = 0;
  size_t values_out_ = 0;
  std::vector<Node> nodes_;
  std::vector<uint32_t> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, uint32_t> memo_;
};

}  // namespace

std::optional<JsonValue> ReadPickle(std::string_view bytes, PickleError* error,
                                    const PickleLimits& limits) {
  PickleLimits scaled = limits;
  const size_t per_input =
      bytes.size() > (SIZE_MAX - PickleLimits::kValuesFloor) / PickleLimits::kValuesPerByte
          ? SIZE_MAX
          : PickleLimits::kValuesFloor + PickleLimits::kValuesPerByte * bytes.size();
  scaled.max_values = std::min(limits.max_values, per_input);
  return Unpickler(bytes, scaled, error).Run();
}

std::string_view PickleOpcodeName(uint8_t opcode) {
  switch (opcode) {
    // clang-format off
    case kMark: return "MARK";              case kStop: return "STOP";
    case kPop: return "POP";                case kPopMark: return "POP_MARK";
    case kDup: return "DUP";                case kFloat: return "FLOAT";
    case kInt: return "INT";                case kBinInt: return "BININT";
    case kBinInt1: return "BININT1";        case kLong: return "LONG";
    case kBinInt2: return "BININT2";        case kNone: return "NONE";
    case kPersId: return "PERSID";          case kBinPersId: return "BINPERSID";
    case kReduce: return "REDUCE";          case kString: return "STRING";
    case kBinString: return "BINSTRING";    case kShortBinString: return "SHORT_BINSTRING";
    case kUnicode: return "UNICODE";        case kBinUnicode: return "BINUNICODE";
    case kAppend: return "APPEND";          case kBuild: return "BUILD";
    case kGlobal: return "GLOBAL";          case kDict: return "DICT";
    case kEmptyDict: return "EMPTY_DICT";   case kAppends: return "APPENDS";
    case kGet: return "GET";                case kBinGet: return "BINGET";
    case kInst: return "INST";              case kLongBinGet: return "LONG_BINGET";
    case kList: return "LIST";              case kEmptyList: return "EMPTY_LIST";
    case kObj: return "OBJ";                case kPut: return "PUT";
    case kBinPut: return "BINPUT";          case kLongBinPut: return "LONG_BINPUT";
    case kSetItem: return "SETITEM";        case kTuple: return "TUPLE";
    case kEmptyTuple: return "EMPTY_TUPLE"; case kSetItems: return "SETITEMS";
    case kBinFloat: return "BINFLOAT";      case kProto: return "PROTO";
    case kNewObj: return "NEWOBJ";          case kExt1: return "EXT1";
    case kExt2: return "EXT2";              case kExt4: return "EXT4";
    case kTuple1: return "TUPLE1";          case kTuple2: return "TUPLE2";
    case kTuple3: return "TUPLE3";          case kNewTrue: return "NEWTRUE";
    case kNewFalse: return "NEWFALSE";      case kLong1: return "LONG1";
    case kLong4: return "LONG4";            case kBinBytes: return "BINBYTES";
    case kShortBinBytes: return "SHORT_BINBYTES";
    case kShortBinUnicode: return "SHORT_BINUNICODE";
    case kBinUnicode8: return "BINUNICODE8"; case kBinBytes8: return "BINBYTES8";
    case kEmptySet: return "EMPTY_SET";     case kAddItems: return "ADDITEMS";
    case kFrozenSet: return "FROZENSET";    case kNewObjEx: return "NEWOBJ_EX";
    case kStackGlobal: return "STACK_GLOBAL"; case kMemoize: return "MEMOIZE";
    case kFrame: return "FRAME";            case kByteArray8: return "BYTEARRAY8";
    case kNextBuffer: return "NEXT_BUFFER"; case kReadonlyBuffer: return "READONLY_BUFFER";
    // clang-format on
    default:
      return "";
  }
}

}  // namespace dsdiag::trace
