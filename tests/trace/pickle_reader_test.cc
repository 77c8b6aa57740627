// trace/torch_fr/pickle_reader.h: the data opcodes of pickle protocols 2-5, built here byte
// by byte (each as pickletools would list it), and the refusals: code, damage, and the
// limits that keep a small file from becoming a large tree.
#include "trace/torch_fr/pickle_reader.h"

#include <gtest/gtest.h>

#include <string>

using namespace std::string_literals;

namespace dsdiag::trace {
namespace {

// "\x80\x02" + body + ".": a protocol-2 pickle of one value.
std::string P2(const std::string& body) { return "\x80\x02"s + body + "."; }

std::string Json(const std::string& pickle) {
  PickleError error;
  const auto v = ReadPickle(pickle, &error);
  if (!v) return "error: expected " + error.expected + ", found " + error.found;
  return v->ToJson();
}

std::string ErrorOf(const std::string& pickle, PickleLimits limits = {}) {
  PickleError error;
  const auto v = ReadPickle(pickle, &error, limits);
  EXPECT_FALSE(v.has_value()) << v->ToJson();
  return "expected " + error.expected + ", found " + error.found;
}

// BINUNICODE: 'X', a 4-byte little-endian length, the UTF-8 bytes.
std::string Str(const std::string& s) {
  std::string out = "X";
  const auto n = static_cast<uint32_t>(s.size());
  for (int i = 0; i < 4; ++i) out += static_cast<char>((n >> (8 * i)) & 0xff);
  return out + s;
}

TEST(PickleReaderTest, ScalarsOfEveryForm) {
  EXPECT_EQ(Json(P2("N"s)), "null");
  EXPECT_EQ(Json(P2("\x88"s)), "true");
  EXPECT_EQ(Json(P2("\x89"s)), "false");
  EXPECT_EQ(Json(P2("K\xff"s)), "255");             // BININT1
  EXPECT_EQ(Json(P2("M\xff\xff"s)), "65535");       // BININT2
  EXPECT_EQ(Json(P2("J\xff\xff\xff\xff"s)), "-1");  // BININT
  EXPECT_EQ(Json(P2("\x8a\x00"s)), "0");            // LONG1, no bytes
  EXPECT_EQ(Json(P2("\x8a\x01\xff"s)), "-1");       // LONG1, sign-extended
  EXPECT_EQ(Json(P2("\x8a\x08\x00\x00\x00\x00\x00\x00\x00\x80"s)), "-9223372036854775808");
  EXPECT_EQ(Json(P2("\x8a\x09\xff\xff\xff\xff\xff\xff\xff\x7f\x00"s)),
            "9223372036854775807");  // nine bytes, still int64
  EXPECT_EQ(Json(P2("\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x80\x00"s)),
            "9.223372036854776e+18");                                // 2^63: past int64, a double
  EXPECT_EQ(Json(P2("\x8b\x02\x00\x00\x00\x01\x01"s)), "257");       // LONG4
  EXPECT_EQ(Json(P2("G\x3f\xf8\x00\x00\x00\x00\x00\x00"s)), "1.5");  // BINFLOAT
  EXPECT_EQ(Json(P2(Str("nccl:all_reduce"))), "\"nccl:all_reduce\"");
  EXPECT_EQ(Json(P2("\x8c\x02hi"s)), "\"hi\"");  // SHORT_BINUNICODE
  EXPECT_EQ(Json(P2("\x8d\x02\x00\x00\x00\x00\x00\x00\x00hi"s)), "\"hi\"");
  EXPECT_EQ(Json(P2("C\x02\xff"
                    "A"s)),
            "\"\\\\xffA\"");  // bytes: non-ASCII kept readable
}

TEST(PickleReaderTest, ContainersTuplesBecomeArraysKeysBecomeText) {
  // {'a': (1, 2), 'b': []} as torch's pickler writes it: EMPTY_DICT, MARK ... SETITEMS.
  EXPECT_EQ(Json(P2("}(" + Str("a") + "K\x01K\x02\x86" + Str("b") + "]u")),
            "{\"a\":[1,2],\"b\":[]}");
  EXPECT_EQ(Json(P2("(K\x01K\x02K\x03t"s)), "[1,2,3]");    // MARK ... TUPLE
  EXPECT_EQ(Json(P2("K\x01\x85"s)), "[1]");                // TUPLE1
  EXPECT_EQ(Json(P2("K\x01K\x02K\x03\x87"s)), "[1,2,3]");  // TUPLE3
  EXPECT_EQ(Json(P2(")"s)), "[]");                         // EMPTY_TUPLE
  EXPECT_EQ(Json(P2("(K\x01K\x02l"s)), "[1,2]");           // MARK ... LIST
  EXPECT_EQ(Json(P2("(" + Str("k") +
                    "K\x01"
                    "d")),
            "{\"k\":1}");  // MARK ... DICT
  EXPECT_EQ(Json(P2("]K\x07"
                    "a"s)),
            "[7]");  // APPEND
  EXPECT_EQ(Json(P2("}" + Str("k") +
                    "N"
                    "s")),
            "{\"k\":null}");                             // SETITEM
  EXPECT_EQ(Json(P2("\x8f(K\x01K\x02\x90"s)), "[1,2]");  // EMPTY_SET, ADDITEMS
  EXPECT_EQ(Json(P2("(K\x01\x91"s)), "[1]");             // FROZENSET
  // {1: 'a', None: 'b', True: 'c', (1, 2): 'd'}: keys as Python's str() spells them.
  EXPECT_EQ(Json(P2("}(K\x01" + Str("a") + "N" + Str("b") + "\x88" + Str("c") + "K\x01K\x02\x86" +
                    Str("d") + "u")),
            "{\"1\":\"a\",\"None\":\"b\",\"True\":\"c\",\"[1,2]\":\"d\"}");
  // A later duplicate key replaces the value in the first one's place, as in Python.
  EXPECT_EQ(Json(P2("}(" + Str("a") + "K\x01" + Str("b") + "K\x02" + Str("a") + "K\x03u")),
            "{\"a\":3,\"b\":2}");
}

TEST(PickleReaderTest, MemoSharesValuesAndSeesLaterFills) {
  // Python memoizes a list before filling it: l = [1]; (l, l).
  EXPECT_EQ(Json(P2("]q\x00(K\x01"
                    "eh\x00\x86"s)),
            "[[1],[1]]");
  // torch's pickler memoizes strings and finished dicts; LONG_BINPUT/LONG_BINGET alike.
  EXPECT_EQ(Json(P2("]r\x05\x00\x00\x00(K\x02"
                    "ej\x05\x00\x00\x00\x86"s)),
            "[[2],[2]]");
  EXPECT_EQ(Json(P2("K\x09\x94"
                    "0(h\x00h\x00l"s)),
            "[9,9]");  // MEMOIZE takes slot 0
  EXPECT_EQ(Json(P2("K\x01"
                    "2\x86"s)),
            "[1,1]");  // DUP
  EXPECT_EQ(Json(P2("K\x01K\x02"
                    "0"s)),
            "1");  // POP
  EXPECT_EQ(Json(P2("K\x01(K\x02K\x03"
                    "1"s)),
            "1");  // POP_MARK
}

TEST(PickleReaderTest, ProtocolFourFramesAreHints) {
  // PROTO 4, FRAME of the rest, SHORT_BINUNICODE, MEMOIZE: what pickle.dumps('hi') writes.
  const std::string p4 = "\x80\x04\x95\x06\x00\x00\x00\x00\x00\x00\x00\x8c\x02hi\x94."s;
  EXPECT_EQ(Json(p4), "\"hi\"");
  EXPECT_EQ(ErrorOf(p4.substr(0, 12)),
            "expected a frame of 6 bytes, found 1 before the end of file at byte 11");
}

TEST(PickleReaderTest, CodeIsRefusedNeverRun) {
  // pickle.dumps(os.system) at protocol 2 starts with GLOBAL 'posix system'.
  EXPECT_EQ(ErrorOf(P2("cposix\nsystem\nq\x00."s)),
            "expected a data opcode of pickle protocol 2 to 5 (no imports, no calls), found "
            "unsupported pickle opcode 0x63 (GLOBAL) at byte 2");
  EXPECT_NE(ErrorOf("\x80\x04\x8c\x02os\x8c\x06system\x93."s)
                .find("opcode 0x93 (STACK_GLOBAL) at byte 14"),
            std::string::npos);
  EXPECT_NE(ErrorOf(P2("NN"
                       "R"s))
                .find("(REDUCE) at byte 4"),
            std::string::npos);
  EXPECT_NE(ErrorOf(P2("}N"
                       "b"s))
                .find("(BUILD) at byte 4"),
            std::string::npos);
  EXPECT_NE(ErrorOf(P2("\xff"s)).find("opcode 0xff at byte 2"), std::string::npos);
}

TEST(PickleReaderTest, DamageIsLocated) {
  EXPECT_EQ(ErrorOf(""),
            "expected a pickle opcode (the pickle ends without STOP), found end of file at byte 0");
  EXPECT_EQ(ErrorOf("\x80\x02K"s),
            "expected 1 bytes of the BININT1 argument, found 0 before the end of file at byte 3");
  EXPECT_EQ(ErrorOf("\x80\x02X\x05\x00\x00\x00"
                    "ab"s),
            "expected 5 bytes of BINUNICODE, found 2 before the end of file at byte 7");
  EXPECT_EQ(ErrorOf("\x80\x06N."s), "expected pickle protocol 2 to 5, found protocol 6 at byte 0");
  EXPECT_EQ(ErrorOf(P2("X\x02\x00\x00\x00\xff\xfe"s)),
            "expected UTF-8 text, found invalid UTF-8 at byte 2");
  EXPECT_EQ(
      ErrorOf(P2("K\x01K\x02"s)),
      "expected one value and no open MARK at STOP, found 2 values and 0 open MARKs at byte 6");
  EXPECT_EQ(ErrorOf(P2("}K\x01"
                       "a"s)),
            "expected a list for APPEND, found another value at byte 5");
  EXPECT_EQ(ErrorOf(P2("e"s)),
            "expected a MARK for APPENDS, found a stack that has none at byte 2");
  EXPECT_EQ(ErrorOf(P2("(K\x01"
                       "e"s)),
            "expected a list below the MARK for APPENDS, found a stack that has none at byte 5");
  EXPECT_EQ(ErrorOf(P2("h\x03"s)),
            "expected a memo entry that was stored before, found memo key 3 at byte 2");
  EXPECT_EQ(ErrorOf(P2("}(K\x01u"s)),
            "expected key, value pairs for SETITEMS, found an odd count at byte 6");
  // An opcode never reaches below the innermost MARK, as in Python.
  EXPECT_EQ(ErrorOf(P2("]((a"s)),
            "expected a list for APPEND, found a stack that has none at byte 5");
}

TEST(PickleReaderTest, LimitsBoundTheTree) {
  // A list that contains itself: l = []; l.append(l).
  EXPECT_EQ(ErrorOf(P2("]q\x00h\x00"
                       "a"s)),
            "expected values nested at most 64 deep, found deeper (or a value that contains "
            "itself) at byte 8");
  // 40 levels of (x, x): 2^40 values from 200 bytes.
  std::string laughs = "]q\x00"s;
  for (int i = 0; i < 40; ++i) laughs += "0h\x00h\x00\x86q\x00"s;  // POP, (m0, m0), PUT 0
  // The budget scales with the input: 64 Ki values and 16 per byte.
  EXPECT_NE(ErrorOf(P2(laughs))
                .find("expected a result of at most " +
                      std::to_string(65536 + 16 * (laughs.size() + 3)) + " values"),
            std::string::npos);
  PickleLimits small;
  small.max_values = 3;
  EXPECT_NE(ErrorOf(P2("(K\x01K\x02K\x03l"s), small).find("at most 3 values"), std::string::npos);
  small = {};
  small.max_memo = 1;
  EXPECT_NE(ErrorOf(P2("K\x01q\x00q\x01"s), small).find("a memo of at most 1 entries"),
            std::string::npos);
  small = {};
  small.max_dict_members = 1;
  EXPECT_NE(
      ErrorOf(P2("}(" + Str("a") + "N" + Str("b") + "Nu"), small).find("a dict of at most 1 keys"),
      std::string::npos);
  EXPECT_NE(ErrorOf(P2("\x8b\x00\x01\x00\x00"s)).find("an integer of at most 64 bytes"),
            std::string::npos);
}

TEST(PickleReaderTest, BytesAfterStopAreIgnored) { EXPECT_EQ(Json(P2("K\x05"s) + "garbage"), "5"); }

TEST(PickleReaderTest, OpcodeNames) {
  EXPECT_EQ(PickleOpcodeName('c'), "GLOBAL");
  EXPECT_EQ(PickleOpcodeName(0x95), "FRAME");
  EXPECT_EQ(PickleOpcodeName(0xff), "");
}

}  // namespace
}  // namespace dsdiag::trace
