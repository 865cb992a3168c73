#include "common/spliced_body.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace ker {
namespace {

TEST(SplicedBody, InsertsGoWhereTheTextStoodWhenTheyWereMade) {
  const std::string request = "..AAA..BB";
  SplicedBody b;
  b.text = "[";
  b.insertRequestBytes(2, 3);
  b.text += ",";
  b.insertRequestBytes(7, 2);
  b.insertRequestBytes(0, 0);
  b.text += "]";
  EXPECT_EQ(b.size(), 8u);
  EXPECT_EQ(b.join(request), "[AAA,BB]");
  std::vector<std::string> pieces;
  EXPECT_TRUE(b.forEachPiece(request, [&](std::string_view p) {
    pieces.emplace_back(p);
    return true;
  }));
  // Empty pieces are never handed out.
  EXPECT_EQ(pieces, (std::vector<std::string>{"[", "AAA", ",", "BB", "]"}));
}

TEST(SplicedBody, StopsWhenThePieceCallbackSaysSo) {
  SplicedBody b;
  b.text = "ab";
  b.insertRequestBytes(0, 1);
  int calls = 0;
  EXPECT_FALSE(b.forEachPiece("x", [&](std::string_view) { return ++calls < 2; }));
  EXPECT_EQ(calls, 2);
}

TEST(SplicedBody, InsertsOutsideTheRequestOrTextAreRefused) {
  SplicedBody b;
  b.text = "ab";
  b.insertRequestBytes(3, 2);
  EXPECT_TRUE(b.fits(5));
  EXPECT_FALSE(b.fits(4));
  EXPECT_THROW(b.join("abcd"), std::out_of_range);
  // Out of order, or past the end of the text.
  SplicedBody disordered{"abc", {{2, 0, 1}, {1, 0, 1}}};
  EXPECT_FALSE(disordered.fits(10));
  SplicedBody past{"abc", {{4, 0, 1}}};
  EXPECT_FALSE(past.fits(10));
  EXPECT_EQ(SplicedBody{"plain"}.join({}), "plain");
}

}  // namespace
}  // namespace ker
