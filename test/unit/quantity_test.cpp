#include "common/quantity.h"

#include <gtest/gtest.h>

namespace ker {
namespace {

Quantity q(std::string_view text) {
  auto parsed = Quantity::parse(text);
  EXPECT_TRUE(parsed) << text;
  return parsed.value_or(Quantity{});
}

TEST(Quantity, RefusesWhatTheApiServerRefuses) {
  for (const char* text : {"", "abc", "1x", "1 ", " 1", "1e", "1e+-3", "1K", "0x10", "1.2.3", "--1",
                           "1Ki5", "1i", "1Gb", "1e2147483648", "1e-2147483649"}) {
    EXPECT_FALSE(Quantity::parse(text)) << text;
  }
}

TEST(Quantity, EmptyNumbersAndZerosAreZero) {
  for (const char* text : {"0", "-", "+", ".", "0.000", "-0", "000", "0Gi", "0e5"}) {
    EXPECT_EQ(q(text), q("0")) << text;
  }
}

TEST(Quantity, SuffixesScaleTheNumber) {
  EXPECT_EQ(q("40Gi"), q("42949672960"));
  EXPECT_EQ(q("1.5"), q("1500m"));
  EXPECT_EQ(q("1k"), q("1000"));
  EXPECT_EQ(q("1e3"), q("1000"));
  EXPECT_EQ(q("1E3"), q("1e+3"));
  EXPECT_EQ(q("1E"), q("1e18"));
  EXPECT_EQ(q("1Ki"), q("1024"));
  EXPECT_EQ(q("0.5Gi"), q("512Mi"));
  EXPECT_EQ(q("1.G"), q("1G"));
  EXPECT_EQ(q(".5"), q("500m"));
  EXPECT_EQ(q("2u"), q("2000n"));
  EXPECT_EQ(q("12e-1"), q("1.2"));
}

TEST(Quantity, OrdersByValue) {
  EXPECT_LT(q("12Gi"), q("40Gi"));
  EXPECT_GT(q("1Mi"), q("1M"));
  EXPECT_LT(q("999"), q("1k"));
  EXPECT_LT(q("12.3"), q("13"));
  EXPECT_GT(q("13"), q("12.3"));
  EXPECT_LT(q("-1"), q("0"));
  EXPECT_LT(q("0"), q("1n"));
  EXPECT_LT(q("1n"), q("2n"));
  EXPECT_LT(q("-2Gi"), q("-1Gi"));
  EXPECT_GT(q("-1Gi"), q("-2Gi"));
  EXPECT_GT(q("1e2147483647"), q("1E"));
  EXPECT_EQ(q("1e-2147483648"), q("1n"));
}

TEST(Quantity, RoundsTheMagnitudeUpToANano) {
  EXPECT_EQ(q("0.1n"), q("1n"));
  EXPECT_EQ(q("1.0000000001"), q("1.000000001"));
  EXPECT_EQ(q("1.0000000000"), q("1"));
  EXPECT_EQ(q("-0.1n"), q("-1n"));
  EXPECT_EQ(q("1e-30"), q("1n"));
}

TEST(Quantity, CapsBinaryValuesAtTheLargestInt64) {
  EXPECT_EQ(q("8Ei"), q("9223372036854775807"));
  EXPECT_EQ(q("10Ei"), q("8Ei"));
  EXPECT_LT(q("7Ei"), q("8Ei"));
  EXPECT_GT(q("1e19"), q("8Ei"));  // decimal values are not capped
}

}  // namespace
}  // namespace ker
