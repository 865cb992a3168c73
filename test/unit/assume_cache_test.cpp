#include "common/assume_cache.h"

#include <gtest/gtest.h>

namespace ker {
namespace {

struct Obj {
  ObjectMeta meta;
  int value = 0;
};
using Ptr = std::shared_ptr<const Obj>;

Ptr obj(const std::string& uid, const std::string& version, int value = 0) {
  return std::make_shared<const Obj>(
      Obj{{.name = "o", .uid = uid, .resourceVersion = version}, value});
}

TEST(AssumeCache, AWriteIsReadUntilTheWatchShowsItOrSomethingNewer) {
  AssumeCache<Obj> cache;
  const Ptr watched = obj("u", "5");
  const Ptr written = obj("u", "7");
  EXPECT_EQ(cache.newest("o", watched), watched) << "nothing assumed";
  cache.assume("o", written);
  EXPECT_EQ(cache.newest("o", watched), written) << "the watch is behind the write";
  EXPECT_EQ(cache.newest("o", obj("u", "6")), written) << "an earlier write's event";
  EXPECT_EQ(cache.size(), 1u);
  const Ptr caughtUp = obj("u", "7", 1);
  EXPECT_EQ(cache.newest("o", caughtUp), caughtUp) << "the write's own event";
  EXPECT_EQ(cache.size(), 0u) << "dropped once the watch caught up";
  EXPECT_EQ(cache.newest("o", watched), watched) << "and not brought back by an old copy";

  cache.assume("o", written);
  const Ptr later = obj("u", "9");
  EXPECT_EQ(cache.newest("o", later), later) << "someone else wrote after this process";
  EXPECT_EQ(cache.size(), 0u);
}

TEST(AssumeCache, OnlyTheWatchSaysWhetherTheObjectExists) {
  AssumeCache<Obj> cache;
  cache.assume("o", obj("u", "7"));
  EXPECT_EQ(cache.newest("o", nullptr), nullptr);
  EXPECT_EQ(cache.size(), 1u) << "not delivered yet, or deleted: kept until forgotten";
  cache.forget("o");
  EXPECT_EQ(cache.size(), 0u);

  cache.assume("o", obj("u", "7"));
  const Ptr recreated = obj("other", "3");
  EXPECT_EQ(cache.newest("o", recreated), recreated) << "another object under the name";
  EXPECT_EQ(cache.size(), 0u);
}

TEST(AssumeCache, TheNewerOfTwoWritesIsKept) {
  AssumeCache<Obj> cache;
  const Ptr second = obj("u", "8");
  cache.assume("o", second);
  cache.assume("o", obj("u", "7"));  // a reply that came last but was written first
  EXPECT_EQ(cache.newest("o", obj("u", "5")), second);
  cache.assume("o", nullptr);
  EXPECT_EQ(cache.newest("o", obj("u", "5")), second) << "nothing written, nothing changed";

  cache.assume("o", obj("u", "x"));
  const Ptr watched = obj("u", "5");
  EXPECT_EQ(cache.newest("o", watched), watched)
      << "versions that do not compare: the watch's copy is trusted";
  EXPECT_EQ(cache.size(), 0u);
}

}  // namespace
}  // namespace ker
