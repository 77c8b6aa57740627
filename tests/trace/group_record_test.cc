// The `group` and `mesh` records (trace/records/group_record.h) and the pg number of a
// group's name: written by AppendFields, read back through the reader and the views.
#include "trace/records/group_record.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "tests/trace/test_util.h"
#include "trace/json_line.h"
#include "trace/record_types.h"

namespace dsdiag::trace::records {
namespace {

using testing::OpenTraceText;
using testing::TempDir;

std::string Line(std::string_view type, const std::function<void(JsonLine*)>& fields) {
  std::string text;
  JsonLine line(&text);
  line.Field(kFieldType, type).Field(kFieldTs, int64_t{5}).Field(kFieldStep, int64_t{0});
  fields(&line);
  line.Finish();
  return text;
}

TEST(GroupNumberTest, TorchsCountedNamesAreTheirNumberAndOthersAHashAboveThem) {
  EXPECT_EQ(GroupNumber("0", true), 0);
  EXPECT_EQ(GroupNumber("anything", true), 0);
  EXPECT_EQ(GroupNumber("3", false), 3);
  EXPECT_EQ(GroupNumber("17", false), 17);
  // split_group's names: a hash of the ranks, the same on every member.
  const std::string hashed = "b1f3c8a0d6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a1";
  EXPECT_EQ(GroupNumber(hashed, false), GroupNumber(hashed, false));
  EXPECT_GE(GroupNumber(hashed, false), int64_t{1} << 30);
  EXPECT_NE(GroupNumber(hashed, false), GroupNumber(hashed + "_1", false));
  EXPECT_GE(GroupNumber("12345678901", false), int64_t{1} << 30);  // past any counter
  EXPECT_GE(GroupNumber("-1", false), int64_t{1} << 30);
  EXPECT_LT(GroupNumber(hashed, false), int64_t{1} << 31);  // the probes' int
}

TEST(GroupRecordTest, WrittenFieldsReadBackThroughTheViews) {
  const std::vector<int> ranks = {1, 3};
  GroupRecord group;
  group.pg = 2;
  group.name = "2";
  group.desc = "mesh_dp";
  group.backend = "gloo";
  group.ranks = &ranks;
  group.group_rank = 1;
  const std::vector<int64_t> shape = {2, 2}, coord = {1, 1}, pgs = {2, 4};
  const std::vector<std::string> dims = {"dp", "tp"};
  MeshRecord mesh{&shape, &dims, &coord, &pgs};

  TempDir dir;
  auto reader =
      OpenTraceText(dir, std::string(testing::kHeader) + "\n" + Line(rec::kGroup, [&](JsonLine* l) {
                           AppendFields(group, l);
                         }) + Line(rec::kMesh, [&](JsonLine* l) { AppendFields(mesh, l); }));
  ASSERT_TRUE(reader);
  Record r;
  ASSERT_TRUE(reader->Next(&r));
  ASSERT_EQ(r.type_id(), rec_id::kGroup);
  const auto g = GroupIdentity::Read(r);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->pg, 2);
  EXPECT_EQ(g->name, "2");
  EXPECT_EQ(g->desc, "mesh_dp");
  EXPECT_EQ(g->backend, "gloo");
  EXPECT_EQ(g->ranks, ranks);
  EXPECT_EQ(g->group_rank, 1);
  EXPECT_EQ(g->Label(), "pg 2 (mesh_dp)");
  ASSERT_TRUE(reader->Next(&r));
  ASSERT_EQ(r.type_id(), rec_id::kMesh);
  const auto m = MeshLayout::Read(r);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->shape, shape);
  EXPECT_EQ(m->dims, dims);
  EXPECT_EQ(m->coord, coord);
  EXPECT_EQ(m->pgs, pgs);
}

TEST(GroupRecordTest, AGroupWithoutRanksOrAMeshOfUnequalLengthsIsNotRead) {
  TempDir dir;
  auto reader = OpenTraceText(
      dir, std::string(testing::kHeader) + "\n" +
               R"({"type":"group","ts":5,"step":0,"pg":2,"name":"2"})"
               "\n" +
               R"({"type":"mesh","ts":5,"step":0,"shape":[2,2],"coord":[0],"pgs":[1,2]})"
               "\n");
  ASSERT_TRUE(reader);
  Record r;
  ASSERT_TRUE(reader->Next(&r));
  EXPECT_FALSE(GroupIdentity::Read(r));
  ASSERT_TRUE(reader->Next(&r));
  EXPECT_FALSE(MeshLayout::Read(r));
}

}  // namespace
}  // namespace dsdiag::trace::records
