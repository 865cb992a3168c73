#include "controller/key_sets.h"

#include <gtest/gtest.h>

namespace ker {
namespace {

TEST(KeySetsTest, AKeyIsKeptOnlyWhileItsSetHasNames) {
  KeySets sets;
  sets.add("d0", "ns/a");
  sets.add("d0", "ns/b");
  sets.add("d0", "ns/a");
  EXPECT_EQ(sets.of("d0"), (std::set<std::string>{"ns/a", "ns/b"}));

  EXPECT_FALSE(sets.remove("d0", "ns/a"));
  EXPECT_TRUE(sets.contains("d0"));
  EXPECT_TRUE(sets.remove("d0", "ns/b"));
  EXPECT_FALSE(sets.contains("d0"));
  EXPECT_TRUE(sets.of("d0").empty());
}

// A name or key never added changes nothing and empties nothing: the caller acts on a key that
// is gone (a deleted pod forgotten) only when its last name went.
TEST(KeySetsTest, RemovingWhatIsNotThereEmptiesNothing) {
  KeySets sets;
  EXPECT_FALSE(sets.remove("d0", "ns/a"));
  sets.add("d0", "ns/a");
  EXPECT_FALSE(sets.remove("d0", "ns/b"));
  EXPECT_FALSE(sets.remove("d1", "ns/a"));
  EXPECT_EQ(sets.of("d0"), (std::set<std::string>{"ns/a"}));
}

}  // namespace
}  // namespace ker
