#include "common/training/numerics.h"

#include <cstdlib>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace memaudit {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(NumericsTest, ModesParseByNameAndOthersAreRefusedNamingTheChoices) {
  EXPECT_EQ(*ParseNumericsMode("portable"), NumericsMode::kPortable);
  EXPECT_EQ(*ParseNumericsMode("native"), NumericsMode::kNative);
  absl::StatusOr<NumericsMode> bad = ParseNumericsMode("fast");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("portable or native"));
}

TEST(NumericsTest, PortableOverridesWhatTheEnvironmentSaysAndNativeKeepsIt) {
  if (!CpuHasPortableIsa()) GTEST_SKIP() << "no AVX2 and FMA";
  setenv("DNNL_MAX_CPU_ISA", "SSE41", 1);
  setenv("OPENBLAS_CORETYPE", "Prescott", 1);
  unsetenv("ATEN_CPU_CAPABILITY");
  ASSERT_TRUE(PinNumerics(NumericsMode::kNative).ok());
  EXPECT_STREQ(std::getenv("DNNL_MAX_CPU_ISA"), "SSE41");
  // Native: the caps the environment sets are part of the class.
  const std::string native = LocalNumericClass(NumericsMode::kNative);
  EXPECT_THAT(native, StartsWith("native/"));
  EXPECT_THAT(native, HasSubstr("/DNNL_MAX_CPU_ISA=SSE41"));
  EXPECT_THAT(native, HasSubstr("/OPENBLAS_CORETYPE=Prescott"));
  EXPECT_EQ(NumericClassProblem(native), "");

  ASSERT_TRUE(PinNumerics(NumericsMode::kPortable).ok());
  EXPECT_STREQ(std::getenv("ATEN_CPU_CAPABILITY"), "avx2");
  EXPECT_STREQ(std::getenv("DNNL_MAX_CPU_ISA"), "AVX2");
  EXPECT_STREQ(std::getenv("OPENBLAS_CORETYPE"), "Haswell");
  EXPECT_EQ(LocalNumericClass(NumericsMode::kPortable), "portable");
  for (const NumericsPin& pin : kNumericsPins) unsetenv(pin.variable);
}

TEST(NumericsTest, ANativeClassWithoutCapsNamesTheCpuModelOnly) {
  for (const NumericsPin& pin : kNumericsPins) unsetenv(pin.variable);
  const std::string native = LocalNumericClass(NumericsMode::kNative);
  EXPECT_THAT(native, StartsWith("native/"));
  EXPECT_EQ(native.find('/', 7), std::string::npos) << native;
  EXPECT_EQ(native, LocalNumericClass(NumericsMode::kNative)) << "stable";
}

TEST(NumericsTest, AClassIsBoundedAndOfPlainCharacters) {
  EXPECT_EQ(NumericClassProblem("native/AuthenticAMD-26-2/DNNL_MAX_CPU_ISA=AVX2"), "");
  EXPECT_EQ(NumericClassProblem(""), "");
  EXPECT_THAT(NumericClassProblem("native/a b"), HasSubstr("letters, digits"));
  EXPECT_THAT(NumericClassProblem(std::string(kMaxNumericClassBytes + 1, 'a')),
              HasSubstr("at most 128 bytes"));
}

TEST(NumericsTest, AnEnvironmentIsBoundedPrintableText) {
  EXPECT_EQ(NumericEnvironmentProblem(""), "");
  EXPECT_EQ(NumericEnvironmentProblem("cpu; LibTorch 1.13.0; ATen AVX2"), "");
  EXPECT_THAT(NumericEnvironmentProblem(std::string(kMaxNumericEnvironmentBytes + 1, 'a')),
              HasSubstr("at most 256 bytes (got 257)"));
  EXPECT_THAT(NumericEnvironmentProblem("cpu\nATen"), HasSubstr("printable ASCII"));
  EXPECT_THAT(NumericEnvironmentProblem("GPU \xc3\xa9"), HasSubstr("printable ASCII"));
}

}  // namespace
}  // namespace memaudit
