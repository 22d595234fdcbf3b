#include "common/messages/export_arrays.h"

#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace memaudit {
namespace {

using ::memaudit::testing::IsOk;
using ::memaudit::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string TempPath(const std::string& stem) {
  return ::testing::TempDir() + "/export_arrays_test_" + std::to_string(getpid()) + "_" + stem;
}

v1::ExportArray Ramp(const std::string& name, uint64_t rows, uint64_t cols) {
  std::vector<double> values(rows * cols);
  for (size_t i = 0; i < values.size(); ++i) values[i] = 0.5 * i;
  return MakeExportArray(name, {"model", "example"}, {rows, cols}, v1::FLOAT64, "a ramp",
                         std::move(values));
}

absl::StatusOr<std::vector<v1::ExportArray>> Reassemble(
    const std::vector<v1::ExportArray>& pieces) {
  ExportAssembler assembler;
  for (const v1::ExportArray& piece : pieces) {
    if (absl::Status s = assembler.Add(piece); !s.ok()) return s;
  }
  return std::move(assembler).Finish();
}

TEST(ExportArraysTest, PiecesPutBackTogetherGiveTheWholeArrays) {
  const v1::ExportArray a = Ramp("phi", 3, 7), b = Ramp("loss", 2, 2);
  std::vector<v1::ExportArray> pieces = SplitExportArray(a, 4);
  ASSERT_EQ(pieces.size(), 6u);  // 21 values in pieces of 4
  EXPECT_EQ(pieces[5].offset(), 20u);
  for (const v1::ExportArray& p : SplitExportArray(b, 4)) pieces.push_back(p);
  auto arrays = Reassemble(pieces);
  ASSERT_THAT(arrays, IsOk());
  ASSERT_EQ(arrays->size(), 2u);
  EXPECT_EQ((*arrays)[0].SerializeAsString(), a.SerializeAsString());
  EXPECT_EQ((*arrays)[1].SerializeAsString(), b.SerializeAsString());
}

TEST(ExportArraysTest, AnEmptyArrayIsOnePiece) {
  const v1::ExportArray empty = Ramp("none", 0, 5);
  ASSERT_EQ(SplitExportArray(empty, 4).size(), 1u);
  auto arrays = Reassemble(SplitExportArray(empty, 4));
  ASSERT_THAT(arrays, IsOk());
  EXPECT_THAT((*arrays)[0].shape(), ElementsAre(0, 5));
}

TEST(ExportArraysTest, RefusesPiecesOutOfOrderOrMalformed) {
  std::vector<v1::ExportArray> pieces = SplitExportArray(Ramp("phi", 3, 7), 4);
  std::swap(pieces[1], pieces[2]);
  EXPECT_THAT(Reassemble(pieces),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("offset")));

  pieces = SplitExportArray(Ramp("phi", 3, 7), 4);
  pieces.pop_back();
  EXPECT_THAT(Reassemble(pieces),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("incomplete")));

  v1::ExportArray bad = Ramp("Phi/../x", 1, 1);
  EXPECT_THAT(Reassemble({bad}), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("name")));

  v1::ExportArray huge = Ramp("huge", 1, 1);
  huge.set_shape(0, uint64_t{1} << 40);
  EXPECT_THAT(Reassemble({huge}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("elements")));

  v1::ExportArray bits = MakeExportArray("keep", {"model"}, {2}, v1::UINT8, "", {1, 300});
  EXPECT_THAT(Reassemble({bits}), StatusIs(absl::StatusCode::kInvalidArgument,
                                           HasSubstr("values[1] is not of its dtype")));

  EXPECT_THAT(Reassemble({Ramp("phi", 1, 1), Ramp("phi", 1, 1)}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("twice")));

  // Arrays of two audits do not mix, in one array or across arrays.
  v1::ExportArray mine = Ramp("phi", 1, 1), theirs = Ramp("loss", 1, 1);
  mine.set_audit_id("a-1");
  theirs.set_audit_id("a-2");
  EXPECT_THAT(Reassemble({mine, theirs}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("another audit")));
  std::vector<v1::ExportArray> split = SplitExportArray(Ramp("phi", 3, 7), 4);
  for (v1::ExportArray& piece : split) piece.set_audit_id("a-1");
  split[2].set_audit_id("a-2");
  EXPECT_THAT(Reassemble(split), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("header")));
}

TEST(ExportArraysTest, AFileRoundTripsAndACutFileIsRefused) {
  const std::string path = TempPath("round_trip");
  // Larger than one piece, so the file holds several.
  const std::vector<v1::ExportArray> arrays = {Ramp("phi", 2, kExportPieceValues),
                                               Ramp("loss", 1, 3)};
  ASSERT_THAT(WriteExportFile(path, arrays), IsOk());
  auto back = ReadExportFile(path);
  ASSERT_THAT(back, IsOk());
  ASSERT_EQ(back->size(), 2u);
  EXPECT_EQ((*back)[0].SerializeAsString(), arrays[0].SerializeAsString());
  EXPECT_EQ((*back)[1].SerializeAsString(), arrays[1].SerializeAsString());

  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes.substr(0, bytes.size() - 9);
  EXPECT_THAT(ReadExportFile(path), StatusIs(absl::StatusCode::kInvalidArgument));
  std::ofstream(path, std::ios::binary | std::ios::trunc) << std::string("\xff\xff\xff\xff\x0f", 5);
  EXPECT_THAT(ReadExportFile(path),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("declares")));
}

}  // namespace
}  // namespace memaudit
