// The ledger of what the extender holds for which pod: every kind of hold means the same
// (no other pod may count on the device until it ends); the kinds differ in what replaces
// and what ends them.
#include "scheduler/cache/hold_ledger.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

namespace ker {
namespace {

using Clock = HoldLedger::Clock;
using std::chrono::seconds;

// Devices "nX-..." are pinned to node "nX"; others are label-placed (no pinned node).
std::vector<std::string> pinnedTo(const std::string& device) {
  if (auto dash = device.find('-'); device.starts_with('n') && dash != std::string::npos) {
    return {device.substr(0, dash)};
  }
  return {};
}

const Clock::time_point t0{};

TEST(HoldLedger, EveryKindKeepsTheDeviceFromOtherPodsUntilItExpires) {
  HoldLedger ledger;
  ASSERT_TRUE(
      ledger.holdForFilter("n1", {"n1-a"}, "filtered", t0, seconds(15), seconds(900), pinnedTo));
  ASSERT_TRUE(ledger.holdForBind({"n1-b"}, "binding", t0, seconds(60), pinnedTo));
  ASSERT_TRUE(ledger.nominate("n1", {"n1-c"}, "preemptor", t0, seconds(30), pinnedTo));
  EXPECT_EQ(ledger.devices(HoldKind::kFilter), 1u);
  EXPECT_EQ(ledger.devices(HoldKind::kBind), 1u);
  EXPECT_EQ(ledger.devices(HoldKind::kNomination), 1u);

  for (const std::string device : {"n1-a", "n1-b", "n1-c"}) {
    EXPECT_TRUE(ledger.heldByOther(device, "someone-else", t0)) << device;
    EXPECT_FALSE(ledger.holdForFilter("n1", {device}, "someone-else", t0, seconds(15), seconds(900),
                                      pinnedTo))
        << device;
    EXPECT_FALSE(ledger.holdForBind({device}, "someone-else", t0, seconds(60), pinnedTo)) << device;
    EXPECT_FALSE(ledger.nominate("n1", {device}, "someone-else", t0, seconds(30), pinnedTo))
        << device;
  }
  EXPECT_FALSE(ledger.heldByOther("n1-a", "filtered", t0));
  EXPECT_FALSE(ledger.heldByOther("n1-a", "someone-else", t0 + seconds(15)));
  EXPECT_TRUE(ledger.heldByOther("n1-b", "someone-else", t0 + seconds(59)));
  EXPECT_FALSE(ledger.heldByOther("n1-b", "someone-else", t0 + seconds(60)));
  // All or none: one device held by another pod refuses the whole request.
  EXPECT_FALSE(ledger.holdForBind({"n1-free", "n1-b"}, "someone-else", t0, seconds(60), pinnedTo));
  EXPECT_FALSE(ledger.heldByOther("n1-free", "x", t0));
}

TEST(HoldLedger, ABindReplacesThePodsFilterHoldAndNominationWhereverTheyWere) {
  HoldLedger ledger;
  ASSERT_TRUE(ledger.holdForFilter("n1", {"n1-a"}, "pod", t0, seconds(15), seconds(900), pinnedTo));
  ASSERT_TRUE(ledger.nominate("n2", {"n2-a"}, "pod", t0, seconds(30), pinnedTo));
  ASSERT_TRUE(ledger.holdForBind({"n3-a"}, "pod", t0, seconds(60), pinnedTo));
  EXPECT_FALSE(ledger.heldByOther("n1-a", "other", t0));
  EXPECT_FALSE(ledger.heldByOther("n2-a", "other", t0));
  EXPECT_TRUE(ledger.heldByOther("n3-a", "other", t0));
  EXPECT_EQ(ledger.filterHoldNode("pod", t0), "");
  EXPECT_EQ(ledger.nominatedNode("pod", t0), "");
  // The filter's choice outlives its hold: it is what the bind is checked against.
  EXPECT_EQ(ledger.filterChoice("pod", t0), "n1");
  EXPECT_EQ(ledger.size(), 1u);
  EXPECT_EQ(ledger.nodeCounts().size(), 1u);
  EXPECT_TRUE(ledger.nodeCounts().contains("n3"));
}

TEST(HoldLedger, AFilterHoldLeavesThePodsStrongerHoldsAndReplacesItsEarlierOne) {
  HoldLedger ledger;
  ASSERT_TRUE(ledger.holdForBind({"n1-a"}, "pod", t0, seconds(60), pinnedTo));
  ASSERT_TRUE(
      ledger.holdForFilter("n1", {"n1-a", "n1-b"}, "pod", t0, seconds(15), seconds(900), pinnedTo));
  EXPECT_EQ(ledger.devices(HoldKind::kBind), 1u);
  EXPECT_EQ(ledger.devices(HoldKind::kFilter), 1u);
  ASSERT_TRUE(ledger.holdForFilter("n2", {"n2-a"}, "pod", t0, seconds(15), seconds(900), pinnedTo));
  EXPECT_FALSE(ledger.heldByOther("n1-b", "other", t0)) << "the earlier filter hold ended";
  EXPECT_TRUE(ledger.heldByOther("n1-a", "other", t0)) << "the bind's hold stays";
  EXPECT_EQ(ledger.filterHoldNode("pod", t0), "n2");
  // Ending the filter hold ends neither the bind's nor the filter hold's record of others.
  ledger.dropFilterHold("pod");
  EXPECT_TRUE(ledger.heldByOther("n1-a", "other", t0));
  EXPECT_FALSE(ledger.heldByOther("n2-a", "other", t0));
  EXPECT_EQ(ledger.filterChoice("pod", t0), "");
}

TEST(HoldLedger, ExpiredFilterHoldsAndNominationsOfEveryPodAreSweptByTheNextOfTheirKind) {
  HoldLedger ledger;
  ASSERT_TRUE(ledger.holdForFilter("n1", {"n1-a"}, "gone", t0, seconds(15), seconds(15), pinnedTo));
  ASSERT_TRUE(ledger.nominate("n1", {"n1-b"}, "gone-too", t0, seconds(30), pinnedTo));
  ASSERT_TRUE(ledger.holdForFilter("n2", {"n2-a"}, "next", t0 + seconds(20), seconds(15),
                                   seconds(15), pinnedTo));
  EXPECT_EQ(ledger.filteredPods(), 1u);
  EXPECT_EQ(ledger.filterChoice("gone", t0 + seconds(20)), "");
  EXPECT_EQ(ledger.nominatedPods(), 1u) << "a filter hold does not sweep nominations";
  ASSERT_TRUE(ledger.nominate("n2", {"n2-b"}, "next", t0 + seconds(40), seconds(30), pinnedTo));
  EXPECT_EQ(ledger.nominatedPods(), 1u);
  EXPECT_EQ(ledger.nominatedNode("next", t0 + seconds(40)), "n2");
  EXPECT_FALSE(ledger.nodeCounts().contains("n1"));
}

TEST(HoldLedger, SeeingTheDeviceTakenEndsFilterAndBindHoldsButNotANomination) {
  HoldLedger ledger;
  ASSERT_TRUE(ledger.holdForFilter("n1", {"n1-a"}, "p1", t0, seconds(15), seconds(900), pinnedTo));
  ASSERT_TRUE(ledger.holdForBind({"n1-b"}, "p2", t0, seconds(60), pinnedTo));
  ASSERT_TRUE(ledger.nominate("n1", {"n1-c"}, "p3", t0, seconds(30), pinnedTo));
  for (const std::string device : {"n1-a", "n1-b", "n1-c"}) {
    ledger.seenTaken(device);
  }
  EXPECT_FALSE(ledger.heldByOther("n1-a", "x", t0));
  EXPECT_FALSE(ledger.heldByOther("n1-b", "x", t0));
  EXPECT_TRUE(ledger.heldByOther("n1-c", "x", t0)) << "the victim's claim shows it Bound first";
  ledger.forgetDevice("n1-c");
  EXPECT_EQ(ledger.size(), 0u);
  EXPECT_TRUE(ledger.nodeCounts().empty());
}

TEST(HoldLedger, AnUndoneBindHoldsWhatItTookAgainButNotWhatAnotherPodHoldsNow) {
  HoldLedger ledger;
  ASSERT_TRUE(ledger.holdForBind({"n1-a", "n1-b"}, "pod", t0, seconds(60), pinnedTo));
  ledger.seenTaken("n1-a");  // the attempt's write was seen before its undo
  ASSERT_TRUE(
      ledger.holdForFilter("n1", {"n1-c"}, "other", t0, seconds(15), seconds(900), pinnedTo));
  ledger.holdAgain("n1", {"n1-a", "n1-b", "n1-c"}, "pod", t0 + seconds(1), seconds(15), pinnedTo);
  EXPECT_EQ(ledger.filterHoldNode("pod", t0 + seconds(1)), "n1");
  EXPECT_TRUE(ledger.heldByOther("n1-a", "third", t0 + seconds(1)));
  EXPECT_TRUE(ledger.heldByOther("n1-b", "third", t0 + seconds(1)));
  EXPECT_TRUE(ledger.heldByOther("n1-c", "pod", t0 + seconds(1))) << "still the other pod's";
  EXPECT_EQ(ledger.devices(HoldKind::kBind), 0u);
  EXPECT_EQ(ledger.devices(HoldKind::kFilter), 3u);
  // As a filter hold, it ends with the hold's time, not the bind's.
  EXPECT_FALSE(ledger.heldByOther("n1-b", "third", t0 + seconds(16)));
  ledger.dropAllHolds("pod");
  EXPECT_FALSE(ledger.heldByOther("n1-a", "third", t0 + seconds(1)));
  EXPECT_EQ(ledger.filterChoice("pod", t0 + seconds(1)), "");
}

TEST(HoldLedger, ANominationTakesOverThePodsOwnFilterHold) {
  HoldLedger ledger;
  ASSERT_TRUE(ledger.holdForFilter("n1", {"n1-a"}, "pod", t0, seconds(15), seconds(900), pinnedTo));
  ASSERT_TRUE(ledger.nominate("n1", {"n1-a"}, "pod", t0, seconds(30), pinnedTo));
  EXPECT_EQ(ledger.devices(HoldKind::kNomination), 1u);
  EXPECT_EQ(ledger.devices(HoldKind::kFilter), 0u);
  ledger.dropFilterHold("pod");
  EXPECT_TRUE(ledger.heldByOther("n1-a", "other", t0)) << "the nomination is not the filter's";
  ledger.dropNomination("pod");
  EXPECT_FALSE(ledger.heldByOther("n1-a", "other", t0));
}

// Random operations by a few pods on a few devices: an operation that succeeds never takes a
// device another pod held unexpired just before, and the counts the filter relies on (per
// kind, per pinned node, in all) always agree with the holds themselves.
TEST(HoldLedger, RandomSequencesKeepOneHolderPerDeviceAndTheCountsTrue) {
  const std::vector<std::string> devices{"n1-a", "n1-b", "n2-a", "n2-b", "floating"};
  const std::vector<std::string> pods{"p0", "p1", "p2"};
  std::mt19937 rng(7);
  auto pick = [&](const auto& v) { return v[rng() % v.size()]; };
  HoldLedger ledger;
  Clock::time_point now = t0;
  // Whether the device has a hold at all, expired or not: none is older than the start.
  auto inLedger = [&](const std::string& device) {
    return ledger.heldByOther(device, "nobody", t0 - seconds(1));
  };
  for (int step = 0; step < 5000; ++step) {
    now += seconds(rng() % 4);
    const std::string pod = pick(pods);
    std::vector<std::string> names{pick(devices)};
    if (rng() % 2 != 0) {
      names.push_back(pick(devices));
    }
    std::map<std::string, bool> takenBefore;
    for (const auto& d : names) {
      takenBefore[d] = ledger.heldByOther(d, pod, now);
    }
    bool took = false;
    bool takes = true;
    switch (rng() % 9) {
      case 0:
        took = ledger.holdForBind(names, pod, now, seconds(60), pinnedTo);
        break;
      case 1:
      case 2:
        took = ledger.holdForFilter("n1", names, pod, now, seconds(15), seconds(900), pinnedTo);
        break;
      case 3:
        took = ledger.nominate("n2", names, pod, now, seconds(30), pinnedTo);
        break;
      case 4:
        ledger.holdAgain("n1", names, pod, now, seconds(15), pinnedTo);
        takes = false;
        for (const auto& d : names) {
          if (takenBefore[d]) {
            EXPECT_TRUE(ledger.heldByOther(d, pod, now)) << "step " << step << " " << d;
          }
        }
        break;
      case 5:
        ledger.seenTaken(names.front());
        takes = false;
        break;
      case 6:
        ledger.dropAllHolds(pod);
        takes = false;
        break;
      case 7:
        ledger.dropFilterHold(pod);
        takes = false;
        break;
      default:
        ledger.dropNomination(pod);
        takes = false;
        break;
    }
    if (takes && took) {
      for (const auto& d : names) {
        EXPECT_FALSE(takenBefore[d]) << "step " << step << ": " << pod << " took " << d;
        EXPECT_FALSE(ledger.heldByOther(d, pod, now)) << "step " << step;
      }
    }
    if (takes && !took) {
      bool anyTaken = false;
      for (const auto& d : names) {
        anyTaken |= takenBefore[d];
      }
      EXPECT_TRUE(anyTaken) << "step " << step << ": refused with every device free";
    }
    size_t held = 0;
    std::map<std::string, uint32_t> perNode;
    for (const auto& d : devices) {
      if (inLedger(d)) {
        ++held;
        for (const auto& node : pinnedTo(d)) {
          ++perNode[node];
        }
      }
    }
    ASSERT_EQ(ledger.size(), held) << "step " << step;
    ASSERT_EQ(ledger.devices(HoldKind::kFilter) + ledger.devices(HoldKind::kBind) +
                  ledger.devices(HoldKind::kNomination),
              ledger.size())
        << "step " << step;
    ASSERT_EQ(ledger.nodeCounts().size(), perNode.size()) << "step " << step;
    for (const auto& [node, count] : perNode) {
      auto it = ledger.nodeCounts().find(node);
      ASSERT_TRUE(it != ledger.nodeCounts().end()) << "step " << step << " " << node;
      ASSERT_EQ(it->second, count) << "step " << step << " " << node;
    }
  }
}

}  // namespace
}  // namespace ker
