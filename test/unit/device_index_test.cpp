#include "scheduler/cache/device_index.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "scheduler_fixtures.h"

namespace ker {
namespace {

using testing::ptr;

using testing::device;

// A device Bound to claim default/c (uid-c) as its `allocation`.
ExtendedResource boundToC(const std::string& name, const std::string& node, int64_t allocation) {
  auto d = device(name, node, {});
  d.phase = DevicePhase::kBound;
  d.claimRef = ClaimRef{"default", "c", "uid-c"};
  d.allocation = allocation;
  return d;
}

std::vector<std::string> names(const std::vector<DevicePtr>& v) {
  std::vector<std::string> out;
  for (const auto& d : v) {
    out.push_back(d->meta.name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(DeviceIndex, FreeOnNodeUsesAffinityPhaseAndResource) {
  DeviceIndex idx;
  idx.upsert(ptr(device("a", "n1", {})));
  idx.upsert(ptr(device("b", "n2", {})));
  idx.upsert(ptr(device("f", "n1", {}, "example.com/fpga")));
  auto bound = device("c", "n1", {});
  bound.phase = DevicePhase::kBound;
  idx.upsert(ptr(bound));
  auto pending = device("p", "n1", {});
  pending.phase = DevicePhase::kPending;
  idx.upsert(ptr(pending));
  auto broken = device("x", "n1", {});
  broken.invalid = "spec.nodeAffinity: bad";
  idx.upsert(ptr(broken));

  EXPECT_EQ(names(idx.freeOnNode("nvidia.com/gpu", "n1", {})), (std::vector<std::string>{"a"}));
  EXPECT_EQ(names(idx.freeOnNode("nvidia.com/gpu", "n2", {})), (std::vector<std::string>{"b"}));
  EXPECT_TRUE(idx.freeOnNode("nvidia.com/gpu", "n3", {}).empty());
  EXPECT_EQ(idx.size(), 6u);
}

TEST(DeviceIndex, LabelAffinityIsEvaluatedPerNode) {
  DeviceIndex idx;
  ExtendedResource zonal = device("z", "unused", {});
  zonal.nodeAffinity.terms = {NodeSelectorTerm{{{"zone", SelectorOperator::kIn, {"a"}}}, {}}};
  idx.upsert(ptr(zonal));
  EXPECT_EQ(names(idx.freeOnNode("nvidia.com/gpu", "n1", {{"zone", "a"}})),
            (std::vector<std::string>{"z"}));
  EXPECT_TRUE(idx.freeOnNode("nvidia.com/gpu", "n2", {{"zone", "b"}}).empty());
}

TEST(DeviceIndex, UpsertMovesADeviceBetweenNodesAndRemoveForgetsIt) {
  DeviceIndex idx;
  idx.upsert(ptr(device("a", "n1", {})));
  idx.upsert(ptr(device("a", "n2", {})));
  EXPECT_TRUE(idx.freeOnNode("nvidia.com/gpu", "n1", {}).empty());
  EXPECT_EQ(names(idx.freeOnNode("nvidia.com/gpu", "n2", {})), (std::vector<std::string>{"a"}));
  idx.remove("a");
  EXPECT_TRUE(idx.freeOnNode("nvidia.com/gpu", "n2", {}).empty());
  EXPECT_EQ(idx.get("a"), nullptr);
  idx.remove("never-there");
}

TEST(DeviceIndex, ReservationsHideDevicesFromOtherPodsOnly) {
  DeviceIndex idx;
  idx.upsert(ptr(device("a", "n1", {})));
  idx.upsert(ptr(device("b", "n1", {})));
  ASSERT_TRUE(idx.holdForBind({"a"}, "pod-1"));
  EXPECT_EQ(names(idx.freeOnNode("nvidia.com/gpu", "n1", {}, "pod-2")),
            (std::vector<std::string>{"b"}));
  EXPECT_EQ(names(idx.freeOnNode("nvidia.com/gpu", "n1", {}, "pod-1")),
            (std::vector<std::string>{"a", "b"}));
  // All or none: b is free but a is taken, so nothing is reserved for pod-2.
  EXPECT_FALSE(idx.holdForBind({"b", "a"}, "pod-2"));
  EXPECT_EQ(idx.holdCount(), 1u);
  idx.dropAllHolds("pod-1");
  EXPECT_TRUE(idx.holdForBind({"b", "a"}, "pod-2"));
}

TEST(DeviceIndex, ReservationEndsWhenTheWatchShowsTheDeviceBound) {
  DeviceIndex idx;
  idx.upsert(ptr(device("a", "n1", {})));
  ASSERT_TRUE(idx.holdForBind({"a"}, "pod-1"));
  auto bound = device("a", "n1", {});
  bound.phase = DevicePhase::kBound;
  idx.upsert(ptr(bound));
  EXPECT_EQ(idx.holdCount(), 0u);
}

// A device its claim's release freed is offered as soon as the claim's event shows the release,
// with no write of the device; the fast path (visitFreeGroups) counts it too. Mid-bind (the device
// shows a later count than the claim) it stays held, and so it does for a claim not yet seen.
TEST(DeviceIndex, TheClaimsReleaseAloneOffersItsDevicesAgain) {
  DeviceIndex idx;
  const auto bound = boundToC("a", "n1", 2);
  idx.upsert(ptr(bound));
  const std::string key = objectKey("default", "c");
  auto freeOnN1 = [&] {
    size_t grouped = 0;
    const bool counted = idx.visitFreeGroups(idx.resource("nvidia.com/gpu"), "n1",
                                             [&](const auto& g) { grouped += g.count; });
    const size_t listed = idx.freeOnNode("nvidia.com/gpu", "n1", {}).size();
    EXPECT_TRUE(!counted || grouped == listed);
    return listed;
  };
  EXPECT_EQ(freeOnN1(), 0u) << "claim not seen yet";
  idx.setClaim(key, "nvidia.com/gpu", {}, ClaimAllocation{"uid-c", 1, false});
  EXPECT_EQ(freeOnN1(), 0u) << "mid-bind";
  idx.setClaim(key, "nvidia.com/gpu", {}, ClaimAllocation{"uid-c", 2, true});
  EXPECT_EQ(freeOnN1(), 0u) << "bound";
  idx.setClaim(key, "nvidia.com/gpu", {}, ClaimAllocation{"uid-c", 2, false});
  EXPECT_EQ(freeOnN1(), 1u) << "released";
  EXPECT_TRUE(idx.offerable(bound));
  idx.claimDeleted(key, ClaimAllocation{"uid-c", 2, false});
  EXPECT_EQ(freeOnN1(), 1u) << "deleted once released: never bound again";
  auto relabelled = bound;
  relabelled.meta.resourceVersion = "1";
  relabelled.meta.labels["x"] = "y";
  idx.upsert(ptr(relabelled));
  EXPECT_EQ(freeOnN1(), 1u) << "an update of the device keeps what it knows of the claim";
  idx.setClaim(key, "nvidia.com/gpu", {}, ClaimAllocation{"uid-new", 0, false});
  EXPECT_EQ(freeOnN1(), 0u) << "a claim of that name made since: the controller frees it";
  idx.claimDeleted(key, ClaimAllocation{"uid-new", 0, false});
  idx.claimDeleted(key, ClaimAllocation{"uid-c", 2, true});
  EXPECT_EQ(freeOnN1(), 0u) << "the earlier claim's deletion does not replace the later one";
  idx.remove("a");
  idx.upsert(ptr(bound));
  EXPECT_EQ(freeOnN1(), 0u) << "the deleted claims are forgotten with the last device naming them";

  idx.setClaim(key, "nvidia.com/gpu", {}, ClaimAllocation{"uid-c", 2, false});
  ASSERT_TRUE(idx.holdForBind({"a"}, "pod-2"));
  auto taken = bound;
  taken.claimRef = ClaimRef{"default", "d", "uid-d"};
  taken.allocation = 1;
  taken.meta.resourceVersion = "2";
  idx.upsert(ptr(taken));
  EXPECT_EQ(idx.holdCount(), 0u) << "the watch shows the bind's write: its hold ends";
  EXPECT_EQ(freeOnN1(), 0u);
  idx.setClaim(objectKey("default", "d"), "nvidia.com/gpu", {}, ClaimAllocation{"uid-d", 0, false});
  EXPECT_EQ(freeOnN1(), 0u) << "its claim's event still shows the count before the bind";
}

// The binder puts the device it wrote into the index at once; the watch may still deliver the
// version before that write. The older version must not offer the device again.
TEST(DeviceIndex, AWatchEventOlderThanTheWriteInTheIndexIsIgnored) {
  DeviceIndex idx;
  auto available = device("a", "n1", {});
  available.meta.resourceVersion = "10";
  idx.upsert(ptr(available));
  auto bound = available;
  bound.phase = DevicePhase::kBound;
  bound.meta.resourceVersion = "11";
  idx.upsert(ptr(bound));
  idx.upsert(ptr(available));
  EXPECT_TRUE(idx.freeOnNode("nvidia.com/gpu", "n1", {}).empty());
  EXPECT_EQ(idx.get("a")->meta.resourceVersion, "11");

  // A device deleted and made again under its name is another object: its version counts.
  auto remade = device("a", "n1", {});
  remade.meta.uid = "uid-a-2";
  remade.meta.resourceVersion = "9";
  idx.upsert(ptr(remade));
  EXPECT_EQ(names(idx.freeOnNode("nvidia.com/gpu", "n1", {})), (std::vector<std::string>{"a"}));
  // A version that is not a number is never taken for an older one.
  auto opaque = remade;
  opaque.phase = DevicePhase::kBound;
  opaque.meta.resourceVersion = "x1";
  idx.upsert(ptr(opaque));
  EXPECT_TRUE(idx.freeOnNode("nvidia.com/gpu", "n1", {}).empty());
}

TEST(DeviceIndex, ExpiredReservationsDoNotHideDevices) {
  DeviceIndex idx;
  idx.upsert(ptr(device("a", "n1", {})));
  ASSERT_TRUE(idx.holdForBind({"a"}, "pod-1", std::chrono::seconds(-1)));
  EXPECT_EQ(names(idx.freeOnNode("nvidia.com/gpu", "n1", {}, "pod-2")),
            (std::vector<std::string>{"a"}));
  EXPECT_TRUE(idx.holdForBind({"a"}, "pod-2"));
}

// A device a live claim lists is never offered to another pod, whatever it says of itself:
// recreated without a status, or set Available by hand, it may still be in use.
TEST(DeviceIndex, DevicesAClaimHoldsAreNeverFree) {
  DeviceIndex idx;
  idx.upsert(ptr(device("a", "n1", {})));
  idx.upsert(ptr(device("b", "n1", {})));
  idx.setClaimDevices("default/c", "nvidia.com/gpu", {"a", "gone"});
  EXPECT_EQ(names(idx.freeOnNode("nvidia.com/gpu", "n1", {})), (std::vector<std::string>{"b"}));
  EXPECT_EQ(idx.claimedCount(), 2u);
  int counted = 0;
  const bool exact =
      idx.visitFreeGroups(idx.resource("nvidia.com/gpu"), "n1",
                          [&](const DeviceIndex::FreeGroup& g) { counted += g.count; });
  EXPECT_TRUE(exact);
  EXPECT_EQ(counted, 1) << "the node's summary leaves the held device out too";

  idx.upsert(ptr(device("gone", "n1", {})));  // recreated under a held name
  EXPECT_EQ(names(idx.freeOnNode("nvidia.com/gpu", "n1", {})), (std::vector<std::string>{"b"}));
  idx.upsert(ptr(device("a", "n2", {})));  // re-indexed: still held
  EXPECT_TRUE(idx.freeOnNode("nvidia.com/gpu", "n2", {}).empty());

  // A second claim naming it keeps it held until both let go.
  idx.setClaimDevices("default/c2", "nvidia.com/gpu", {"a"});
  idx.setClaimDevices("default/c", "nvidia.com/gpu", {"gone"});
  EXPECT_TRUE(idx.freeOnNode("nvidia.com/gpu", "n2", {}).empty());
  idx.setClaimDevices("default/c2", "nvidia.com/gpu", {});
  EXPECT_EQ(names(idx.freeOnNode("nvidia.com/gpu", "n2", {})), (std::vector<std::string>{"a"}));
  idx.setClaimDevices("default/c", "nvidia.com/gpu", {});
  EXPECT_EQ(names(idx.freeOnNode("nvidia.com/gpu", "n1", {})),
            (std::vector<std::string>{"b", "gone"}));
  EXPECT_EQ(idx.claimedCount(), 0u);
  counted = 0;
  EXPECT_TRUE(idx.visitFreeGroups(idx.resource("nvidia.com/gpu"), "n1",
                                  [&](const DeviceIndex::FreeGroup& g) { counted += g.count; }));
  EXPECT_EQ(counted, 2) << "the summary counts them again";
}

// The claim informer's one call per event: what the claim lists and its allocation change
// together, as the two calls would have changed them one after the other.
TEST(DeviceIndex, SetClaimAppliesTheListAndTheAllocationOfOneEvent) {
  DeviceIndex idx;
  const auto bound = boundToC("a", "n1", 1);
  idx.upsert(ptr(bound));
  idx.upsert(ptr(device("b", "n1", {})));
  const std::string key = objectKey("default", "c");
  idx.setClaim(key, "nvidia.com/gpu", {"b", "a", "a"}, ClaimAllocation{"uid-c", 1, true});
  EXPECT_TRUE(idx.freeOnNode("nvidia.com/gpu", "n1", {}).empty()) << "both held";
  EXPECT_EQ(idx.claimedCount(), 2u);
  EXPECT_EQ(idx.claimOf(bound)->allocation, 1);

  idx.setClaim(key, "nvidia.com/gpu", {}, ClaimAllocation{"uid-c", 1, false});
  EXPECT_EQ(names(idx.freeOnNode("nvidia.com/gpu", "n1", {})), (std::vector<std::string>{"a", "b"}))
      << "released: the list lets b go, the allocation frees a";
  EXPECT_EQ(idx.claimedCount(), 0u);

  idx.setClaim(key, "nvidia.com/gpu", {"b"}, ClaimAllocation{"uid-c", 1, false});
  EXPECT_EQ(names(idx.freeOnNode("nvidia.com/gpu", "n1", {})), (std::vector<std::string>{"a"}))
      << "the list alone changed";
  idx.setClaim(key, "nvidia.com/gpu", {"b"}, ClaimAllocation{"uid-c", 2, true});
  EXPECT_EQ(names(idx.freeOnNode("nvidia.com/gpu", "n1", {})), (std::vector<std::string>{"a"}))
      << "the allocation alone changed: a is still freed by the later count";
}

TEST(DeviceIndex, AHoldCoversOnlyTheClaimsResource) {
  DeviceIndex idx;
  idx.upsert(ptr(device("a", "n1", {}, "example.com/fpga")));
  idx.setClaimDevices("default/c", "nvidia.com/gpu", {"a"});
  EXPECT_EQ(names(idx.freeOnNode("example.com/fpga", "n1", {})), (std::vector<std::string>{"a"}));
}

TEST(DeviceIndex, EqualPropertiesShareAnIdAndAFreedSlotGetsANewId) {
  DeviceIndex idx;
  idx.upsert(ptr(device("a", "n1", {{"type", "k80"}})));
  idx.upsert(ptr(device("b", "n1", {{"type", "k80"}})));
  idx.upsert(ptr(device("c", "n1", {{"type", "p100"}})));
  auto seen = [&] {
    std::map<std::string, std::pair<uint32_t, uint64_t>> out;
    idx.visitFree("nvidia.com/gpu", "n1", {}, "", [&](const DeviceIndex::FreeDevice& d) {
      out[d.device->meta.name] = {d.propertiesSlot, d.propertiesId};
    });
    return out;
  };
  auto before = seen();
  ASSERT_EQ(before.size(), 3u);
  EXPECT_EQ(before["a"], before["b"]);
  EXPECT_NE(before["a"].first, before["c"].first);
  EXPECT_NE(before["a"].second, before["c"].second);

  // c's properties are gone with it; its slot is reused by a new set under a new id, so a
  // caller's memo keyed by slot cannot mistake the new set for the old one.
  idx.remove("c");
  idx.upsert(ptr(device("d", "n1", {{"type", "a100"}})));
  auto after = seen();
  EXPECT_EQ(after["d"].first, before["c"].first);
  EXPECT_NE(after["d"].second, before["c"].second);
  EXPECT_EQ(after["a"], before["a"]);

  // A device whose properties change moves to the other set.
  idx.upsert(ptr(device("b", "n1", {{"type", "a100"}})));
  EXPECT_EQ(seen()["b"], after["d"]);
}

TEST(DeviceIndex, LabelPlacedDevicesAreKnownPerResource) {
  DeviceIndex idx;
  idx.upsert(ptr(device("a", "n1", {})));
  EXPECT_FALSE(idx.hasLabelPlacedDevices("nvidia.com/gpu"));
  auto floating = device("f", "", {});
  floating.nodeAffinity =
      NodeSelector{{NodeSelectorTerm{{{"zone", SelectorOperator::kIn, {"z1"}}}, {}}}};
  idx.upsert(ptr(floating));
  EXPECT_TRUE(idx.hasLabelPlacedDevices("nvidia.com/gpu"));
  EXPECT_FALSE(idx.hasLabelPlacedDevices("example.com/fpga"));
  idx.remove("f");
  EXPECT_FALSE(idx.hasLabelPlacedDevices("nvidia.com/gpu"));

  // Pinned by name, but its term also tests a label: labels are needed while it is there.
  auto pinnedZonal = device("pz", "n1", {});
  pinnedZonal.nodeAffinity.terms[0].matchExpressions = {{"zone", SelectorOperator::kIn, {"z1"}}};
  idx.upsert(ptr(pinnedZonal));
  EXPECT_TRUE(idx.hasLabelPlacedDevices("nvidia.com/gpu"));
  idx.upsert(ptr(device("pz", "n1", {})));
  EXPECT_FALSE(idx.hasLabelPlacedDevices("nvidia.com/gpu"));
}

TEST(PinnedNodes, OnlyWhenEveryTermPinsNames) {
  NodeSelector s;
  s.terms = {NodeSelectorTerm{{}, {{"metadata.name", SelectorOperator::kIn, {"n1", "n2"}}}},
             NodeSelectorTerm{{{"zone", SelectorOperator::kIn, {"a"}}},
                              {{"metadata.name", SelectorOperator::kIn, {"n3"}}}}};
  EXPECT_EQ(pinnedNodes(s), (std::set<std::string>{"n1", "n2", "n3"}));
  s.terms.push_back(NodeSelectorTerm{{{"zone", SelectorOperator::kIn, {"a"}}}, {}});
  EXPECT_TRUE(pinnedNodes(s).empty());
  EXPECT_TRUE(pinnedNodes(NodeSelector{}).empty());
}

}  // namespace
}  // namespace ker
