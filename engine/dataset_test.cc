#include "engine/dataset.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "gtest/gtest.h"

namespace memaudit::engine {
namespace {

// Every pixel value scales to v / 255.0f exactly as RunClassifier always
// has: the float bits are compared, not approximated.
TEST(DatasetTest, Uint8PixelsScaleAsTheyAlwaysHave) {
  data::LabeledExamples data;
  data.count = 2;
  data.features = 128;
  data.classes = 2;
  for (int v = 0; v < 256; ++v) data.pixels.push_back(static_cast<uint8_t>(v));
  data.labels = {1, 0};
  const TensorDataset t = FromLabeledExamples(data, {1, 0, 1});
  ASSERT_EQ(t.x().sizes(), (std::vector<int64_t>{3, 128}));
  const float* x = t.x().data_ptr<float>();
  for (int row = 0; row < 3; ++row) {
    const int source = row == 1 ? 0 : 1;
    for (int f = 0; f < 128; ++f) {
      const float expected = static_cast<float>(source * 128 + f) / 255.0f;
      EXPECT_EQ(std::memcmp(&x[row * 128 + f], &expected, sizeof(float)), 0)
          << "row " << row << " feature " << f;
    }
  }
  EXPECT_EQ(t.y()[0].item<int64_t>(), 0);
  EXPECT_EQ(t.y()[1].item<int64_t>(), 1);
}

TEST(DatasetTest, FloatValuesAreCopiedUnchanged) {
  data::LabeledExamples data;
  data.count = 3;
  data.features = 2;
  data.classes = 3;
  data.values = {-0.0f, 1e-40f, std::numeric_limits<float>::max(), -3.25f, 0.1f, 7e-3f};
  data.labels = {2, 0, 1};
  const TensorDataset t = FromLabeledExamples(data, {2, 0});
  const float* x = t.x().data_ptr<float>();
  EXPECT_EQ(std::memcmp(x, &data.values[4], 2 * sizeof(float)), 0);
  EXPECT_EQ(std::memcmp(x + 2, &data.values[0], 2 * sizeof(float)), 0);
  EXPECT_TRUE(std::signbit(x[2])) << "-0.0 stays -0.0";
  EXPECT_EQ(t.y()[0].item<int64_t>(), 1);
  EXPECT_EQ(t.y()[1].item<int64_t>(), 2);
}

}  // namespace
}  // namespace memaudit::engine
