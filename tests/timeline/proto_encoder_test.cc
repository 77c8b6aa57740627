// ProtoEncoder's wire format, checked against bytes worked out by hand from the protobuf
// encoding rules (varints, zigzag-free int64 as two's complement, fixed64 doubles, nested
// lengths), and a nested message whose length needs a second byte.
#include "timeline/proto_encoder.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace dsdiag::timeline {
namespace {

std::string Bytes(std::initializer_list<int> bytes) {
  std::string s;
  for (int b : bytes) s.push_back(static_cast<char>(b));
  return s;
}

TEST(ProtoEncoderTest, ScalarsAsTheWireFormatSpellsThem) {
  EventBuffer out;
  ProtoEncoder pb(&out);
  pb.Varint(1, 150);  // the protobuf docs' own example: 08 96 01
  pb.Int(2, -1);      // an int64's -1 is ten bytes
  pb.String(3, "hi");
  pb.Double(4, 1.0);
  EXPECT_EQ(out.view(), Bytes({0x08, 0x96, 0x01,                                                  //
                               0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,  //
                               0x1a, 0x02, 'h',  'i',                                             //
                               0x21, 0,    0,    0,    0,    0,    0,    0xf0, 0x3f}));
}

TEST(ProtoEncoderTest, FieldNumbersPastFifteenTakeTwoTagBytes) {
  EventBuffer out;
  ProtoEncoder(&out).Varint(60, 1);  // (60 << 3) | 0 = 480
  EXPECT_EQ(out.view(), Bytes({0xe0, 0x03, 0x01}));
}

TEST(ProtoEncoderTest, NestedMessageLengthsOfOneAndTwoBytes) {
  for (const size_t body : {size_t{0}, size_t{127}, size_t{128}, size_t{300}}) {
    SCOPED_TRACE(body);
    EventBuffer out;
    ProtoEncoder pb(&out);
    const size_t outer = pb.Begin(1);
    const size_t inner = pb.Begin(2);
    pb.Raw(std::string(body, 'x'));
    pb.End(inner);
    pb.Varint(3, 7);
    pb.End(outer);
    // The inner message: tag, its length as a varint, its bytes; then field 3.
    std::string inner_bytes = Bytes({0x12});
    char length[ProtoEncoder::kMaxVarint];
    inner_bytes.append(length, ProtoEncoder::PutVarint(length, body));
    inner_bytes += std::string(body, 'x') + Bytes({0x18, 0x07});
    std::string expected = Bytes({0x0a});
    expected.append(length, ProtoEncoder::PutVarint(length, inner_bytes.size()));
    expected += inner_bytes;
    EXPECT_EQ(out.view(), expected);
  }
}

TEST(ProtoEncoderTest, GetVarintReadsBackWhatPutVarintWrote) {
  for (const uint64_t v :
       {uint64_t{0}, uint64_t{127}, uint64_t{128}, uint64_t{1} << 35, ~uint64_t{0}}) {
    char bytes[ProtoEncoder::kMaxVarint];
    const char* end = ProtoEncoder::PutVarint(bytes, v);
    uint64_t back = 1;
    EXPECT_EQ(ProtoEncoder::GetVarint(bytes, end, &back), end);
    EXPECT_EQ(back, v);
    EXPECT_EQ(ProtoEncoder::GetVarint(bytes, end - 1, &back), nullptr) << "cut: " << v;
  }
}

}  // namespace
}  // namespace dsdiag::timeline
