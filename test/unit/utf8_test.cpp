#include "common/utf8.h"

#include <gtest/gtest.h>

namespace ker {
namespace {

TEST(Utf8Test, TheFirstByteThatIsNotUtf8IsFound) {
  EXPECT_EQ(firstInvalidUtf8(""), std::nullopt);
  EXPECT_EQ(firstInvalidUtf8("plain"), std::nullopt);
  EXPECT_EQ(firstInvalidUtf8("\xC3\xA9t\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"), std::nullopt);
  EXPECT_EQ(firstInvalidUtf8("ab\xFF"), 2u);
  EXPECT_EQ(firstInvalidUtf8("a\xC3"), 1u);             // cut short
  EXPECT_EQ(firstInvalidUtf8("\xC0\x80"), 0u);          // overlong NUL
  EXPECT_EQ(firstInvalidUtf8("\xE0\x80\xAF"), 0u);      // overlong '/'
  EXPECT_EQ(firstInvalidUtf8("x\xED\xA0\x80"), 1u);     // a surrogate
  EXPECT_EQ(firstInvalidUtf8("\xF4\x90\x80\x80"), 0u);  // past U+10FFFF
  EXPECT_EQ(firstInvalidUtf8("\xE2\x82 "), 0u);         // a continuation missing
  EXPECT_EQ(firstInvalidUtf8("\x80"), 0u);              // a continuation alone
}

TEST(Utf8Test, ClippingKeepsWholeCharactersAndReplacesBadBytes) {
  EXPECT_EQ(clippedUtf8("abc", 10), "abc");
  EXPECT_EQ(clippedUtf8("abc", 2), "ab");
  EXPECT_EQ(clippedUtf8("a\xC3\xA9", 2), "a");  // é would be split
  EXPECT_EQ(clippedUtf8("a\xC3\xA9", 3), "a\xC3\xA9");
  EXPECT_EQ(clippedUtf8("a\xFFz", 10), "a\xEF\xBF\xBDz");
  EXPECT_EQ(clippedUtf8("a\xFFz", 3), "a");  // the replacement does not fit
}

}  // namespace
}  // namespace ker
