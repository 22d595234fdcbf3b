#include "scoring/relational.h"

#include <string>
#include <vector>

#include "common/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace memaudit::scoring {
namespace {

using Refs = std::vector<std::string>;

TEST(RelationalTest, CorruptionRemovesOnlyDigits) {
  EXPECT_EQ(RemoveDigits("23.5% under 18"), ".% under ");
  EXPECT_EQ(RemoveDigits("On February 6, 2016,"), "On February , ,");
  EXPECT_TRUE(ContainsDigit("76.5"));
  EXPECT_FALSE(ContainsDigit("February"));
}

TEST(RelationalTest, NormalizationFollowsSquad) {
  EXPECT_EQ(NormalizeAnswer("  The  Big, Apple! "), "big apple");
  EXPECT_EQ(NormalizeAnswer("76.5"), "765");  // punctuation inside numbers goes too
}

TEST(RelationalTest, SuccessMetricsHandComputed) {
  EXPECT_EQ(*AnswerSuccess("the Answer", Refs{"answer"}, SuccessMetric::kExactMatch), 1.0);
  EXPECT_EQ(*AnswerSuccess("answers", Refs{"answer"}, SuccessMetric::kExactMatch), 0.0);
  // Digits {5,5,5,1,2} vs {5,5,5,1,3}: 4 common, P = R = 4/5.
  EXPECT_DOUBLE_EQ(*AnswerSuccess("555-12", Refs{"555 13"}, SuccessMetric::kDigitF1), 0.8);
  // Digits {1,2} vs {1,2,3,4}: P = 1, R = 1/2, F1 = 2/3.
  EXPECT_DOUBLE_EQ(*AnswerSuccess("12", Refs{"1234"}, SuccessMetric::kDigitF1), 2.0 / 3.0);
  EXPECT_EQ(*AnswerSuccess("no digits", Refs{"none"}, SuccessMetric::kDigitF1), 1.0);
  EXPECT_EQ(*AnswerSuccess("", Refs{"7"}, SuccessMetric::kDigitF1), 0.0);
  // Tokens {february} vs {february, 6, 2016}: P = 1, R = 1/3, F1 = 1/2.
  EXPECT_DOUBLE_EQ(*AnswerSuccess("February", Refs{"February 6, 2016"}, SuccessMetric::kTokenF1),
                   0.5);
  // The best reference wins.
  EXPECT_EQ(*AnswerSuccess("42", Refs{"41", "42"}, SuccessMetric::kExactMatch), 1.0);
  EXPECT_FALSE(AnswerSuccess("42", Refs{}, SuccessMetric::kExactMatch).ok());
}

TEST(RelationalTest, RmNormIsTrainMinusValidation) {
  std::vector<QaPrediction> train = {
      {"555 1234", {"555 1234"}}, {"555 1200", {"555 1234"}}, {"", {"911"}}, {"42", {"42"}}};
  std::vector<QaPrediction> val = {{"", {"123"}}, {"123", {"123", "one two three"}}};
  auto em = ComputeRelationalMemorization(train, val, SuccessMetric::kExactMatch);
  MEMAUDIT_ASSERT_OK(em);
  EXPECT_DOUBLE_EQ(em->success_train, 0.5);
  EXPECT_DOUBLE_EQ(em->success_val, 0.5);
  EXPECT_DOUBLE_EQ(em->rm_norm, 0.0);
  // Digit F1 gives partial credit: train (1 + 5/7 + 0 + 1)/4, val 1/2.
  auto f1 = ComputeRelationalMemorization(train, val, SuccessMetric::kDigitF1);
  EXPECT_NEAR(f1->success_train, (2.0 + 5.0 / 7.0) / 4.0, 1e-15);
  EXPECT_NEAR(f1->rm_norm, (2.0 + 5.0 / 7.0) / 4.0 - 0.5, 1e-15);
  EXPECT_FALSE(ComputeRelationalMemorization({}, val, SuccessMetric::kDigitF1).ok());
  std::vector<QaPrediction> no_refs = {{"1", {}}};
  EXPECT_FALSE(ComputeRelationalMemorization(train, no_refs, SuccessMetric::kDigitF1).ok());
}

TEST(RelationalTest, RecordSuccessesAreWhatTheMeansAverage) {
  std::vector<QaPrediction> train = {
      {"555 1234", {"555 1234"}}, {"555 1200", {"555 1234"}}, {"", {"911"}}, {"42", {"42"}}};
  auto em = RecordSuccesses(train, SuccessMetric::kExactMatch);
  MEMAUDIT_ASSERT_OK(em);
  EXPECT_EQ(*em, (std::vector<double>{1, 0, 0, 1}));
  auto f1 = RecordSuccesses(train, SuccessMetric::kDigitF1);
  MEMAUDIT_ASSERT_OK(f1);
  ASSERT_EQ(f1->size(), 4u);
  EXPECT_NEAR((*f1)[1], 5.0 / 7.0, 1e-15);
  std::vector<QaPrediction> no_refs = {{"1", {}}};
  EXPECT_FALSE(RecordSuccesses(no_refs, SuccessMetric::kDigitF1).ok());
}

}  // namespace
}  // namespace memaudit::scoring
