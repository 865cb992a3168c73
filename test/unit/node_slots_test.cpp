#include "scheduler/cache/node_slots.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>

namespace ker {
namespace {

TEST(NodeSlots, UnknownNamesHaveNoSlot) {
  NodeSlots slots;
  EXPECT_EQ(slots.find("n1"), NodeSlots::kNone);
  slots.acquire("n1");
  EXPECT_EQ(slots.find("n2"), NodeSlots::kNone);
  EXPECT_EQ(slots.find(""), NodeSlots::kNone);
  EXPECT_EQ(slots.find("n1 "), NodeSlots::kNone);
}

TEST(NodeSlots, SlotsAreDenseAndStable) {
  NodeSlots slots;
  EXPECT_EQ(slots.acquire("a"), 0u);
  EXPECT_EQ(slots.acquire("b"), 1u);
  EXPECT_EQ(slots.acquire("a"), 0u);  // a second device on the node
  EXPECT_EQ(slots.find("a"), 0u);
  EXPECT_EQ(slots.find("b"), 1u);
  EXPECT_EQ(slots.size(), 2u);
  EXPECT_EQ(slots.capacity(), 2u);
  EXPECT_EQ(slots.name(1), "b");
}

TEST(NodeSlots, ReleasedSlotIsFreedAfterTheLastHolderAndReused) {
  NodeSlots slots;
  const uint32_t a = slots.acquire("a");
  slots.acquire("a");
  slots.acquire("b");
  slots.release(a);
  EXPECT_EQ(slots.find("a"), a);  // still held once
  slots.release(a);
  EXPECT_EQ(slots.find("a"), NodeSlots::kNone);
  EXPECT_EQ(slots.size(), 1u);
  EXPECT_EQ(slots.acquire("c"), a);
  EXPECT_EQ(slots.find("c"), a);
  EXPECT_EQ(slots.find("b"), 1u);
  EXPECT_EQ(slots.capacity(), 2u);
}

TEST(NodeSlots, LongNamesCompareBeyondTheInlineBytes) {
  NodeSlots slots;
  const std::string base(60, 'x');
  const uint32_t one = slots.acquire(base + "1");
  const uint32_t two = slots.acquire(base + "2");
  EXPECT_NE(one, two);
  EXPECT_EQ(slots.find(base + "1"), one);
  EXPECT_EQ(slots.find(base + "2"), two);
  EXPECT_EQ(slots.find(base + "3"), NodeSlots::kNone);
  EXPECT_EQ(slots.find(base), NodeSlots::kNone);
}

// Many inserts and removals in random order (growth, long probe runs, backward-shift
// deletion) agree with a std::map model.
TEST(NodeSlots, AgreesWithAModelUnderChurn) {
  NodeSlots slots;
  std::map<std::string, std::pair<uint32_t, int>> model;  // name -> slot, holders
  std::mt19937 rng(7);
  for (int step = 0; step < 20000; ++step) {
    const std::string name = "node-" + std::to_string(rng() % 700);
    auto it = model.find(name);
    if (rng() % 2 == 0 || it == model.end()) {
      const uint32_t slot = slots.acquire(name);
      if (it == model.end()) {
        model[name] = {slot, 1};
      } else {
        EXPECT_EQ(slot, it->second.first);
        ++it->second.second;
      }
    } else {
      slots.release(it->second.first);
      if (--it->second.second == 0) {
        model.erase(it);
      }
    }
    if (step % 500 == 0) {
      for (int k = 0; k < 700; ++k) {
        const std::string probe = "node-" + std::to_string(k);
        auto m = model.find(probe);
        ASSERT_EQ(slots.find(probe), m == model.end() ? NodeSlots::kNone : m->second.first)
            << probe << " at step " << step;
      }
      ASSERT_EQ(slots.size(), model.size());
    }
  }
}

}  // namespace
}  // namespace ker
