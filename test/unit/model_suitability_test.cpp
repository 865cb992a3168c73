#include <gtest/gtest.h>

#include "model/suitability.h"
#include "scheduler_fixtures.h"

namespace ker {
namespace {

using testing::claim;
using testing::device;

TEST(Suitability, ChecksResourceNamedListAndSelectorInThatOrder) {
  auto d = device("gpu-0", "n1", {{"type", "k80"}});
  auto c = claim("c", 1, {{"type", "k80"}});
  EXPECT_TRUE(suits(d, c));

  c.rawResourceName = "example.com/fpga";
  EXPECT_FALSE(suits(d, c));

  c = claim("c", 1, {{"type", "p100"}});
  EXPECT_FALSE(suits(d, c));

  c = claim("c", 1);
  c.extendedResourceNames = std::vector<std::string>{"gpu-1"};
  EXPECT_FALSE(suits(d, c));
  c.extendedResourceNames = std::vector<std::string>{"gpu-1", "gpu-0"};
  EXPECT_TRUE(suits(d, c));
}

TEST(Suitability, SelectorExpressions) {
  auto d = device("gpu-0", "n1", {{"type", "k80"}, {"zone", "a"}});
  auto c = claim("c", 1);
  c.metadataRequirements.matchExpressions = {{"zone", SelectorOperator::kIn, {"a", "b"}},
                                             {"broken", SelectorOperator::kDoesNotExist, {}}};
  EXPECT_TRUE(suits(d, c));
  c.metadataRequirements.matchExpressions = {{"type", SelectorOperator::kNotIn, {"k80"}}};
  EXPECT_FALSE(suits(d, c));
}

TEST(Suitability, NamesTheFirstRuleThatFails) {
  auto d = device("gpu-0", "n1", {{"type", "k80"}});
  auto c = claim("c", 1, {{"type", "p100"}});
  c.extendedResourceNames = std::vector<std::string>{"gpu-1"};
  EXPECT_EQ(suitability(d, c), Unsuited::kNotNamed);
  c.extendedResourceNames = std::vector<std::string>{"gpu-0"};
  EXPECT_EQ(suitability(d, c), Unsuited::kSelectorMismatch);
  c.rawResourceName = "example.com/fpga";
  EXPECT_EQ(suitability(d, c), Unsuited::kOtherResource);
  // An invalid selector selects nothing.
  c = claim("c", 1);
  c.metadataRequirements.matchExpressions = {{"type", SelectorOperator::kGt, {"1"}}};
  EXPECT_EQ(suitability(d, c), Unsuited::kSelectorMismatch);
}

TEST(Offerable, OnlyAValidAvailableUnheldDeviceThatStays) {
  auto d = device("gpu-0", "n1", {});
  d.phase = DevicePhase::kAvailable;
  EXPECT_TRUE(offerable(d));
  auto held = d;
  held.claimRef = ClaimRef{"default", "c", "uid-c"};
  EXPECT_FALSE(offerable(held));
  auto pending = d;
  pending.phase = DevicePhase::kPending;
  EXPECT_FALSE(offerable(pending));
  auto deleting = d;
  deleting.meta.deleting = true;
  EXPECT_FALSE(offerable(deleting));
  auto invalid = d;
  invalid.invalid = "spec.rawResourceName: empty";
  EXPECT_FALSE(offerable(invalid));
}

// A device bound to claim c by its third bind, as that bind wrote it.
ExtendedResource boundByThirdBind() {
  auto d = device("gpu-0", "n1", {});
  d.phase = DevicePhase::kBound;
  d.claimRef = ClaimRef{"default", "c", "uid-c"};
  d.allocation = 3;
  return d;
}

TEST(FreedByClaim, OnlyTheClaimsOwnReleaseOrALaterBindFreesTheDevice) {
  const auto d = boundByThirdBind();
  EXPECT_FALSE(freedByClaim(d, {"uid-c", 2, false})) << "mid-bind: the claim shows the last count";
  EXPECT_FALSE(freedByClaim(d, {"uid-c", 3, true})) << "the claim holds this allocation";
  EXPECT_TRUE(freedByClaim(d, {"uid-c", 3, false})) << "released";
  EXPECT_TRUE(freedByClaim(d, {"uid-c", 4, true})) << "bound again since, without it";
  EXPECT_FALSE(freedByClaim(d, {"uid-other", 4, false})) << "another claim of that name";
  auto uncounted = d;
  uncounted.allocation = 0;
  EXPECT_FALSE(freedByClaim(uncounted, {"uid-c", 0, false})) << "bound before binds were counted";
  auto noUid = d;
  noUid.claimRef->uid.clear();
  EXPECT_FALSE(freedByClaim(noUid, {"", 3, false}));
  auto available = d;
  available.phase = DevicePhase::kAvailable;
  EXPECT_FALSE(freedByClaim(available, {"uid-c", 3, false})) << "nothing to free";
}

TEST(FreedByClaim, TheNamedClaimIsLookedUpByItsNamespaceAndName) {
  ExtendedResourceClaim claim;
  claim.meta.ns = "default";
  claim.meta.name = "c";
  claim.meta.uid = "uid-c";
  claim.allocation = 3;
  claim.statusReadable = true;
  claim.phase = ClaimPhase::kPending;
  std::vector<std::string> asked;
  auto find = [&](const std::string& key) -> const ExtendedResourceClaim* {
    asked.push_back(key);
    return key == "default/c" ? &claim : nullptr;
  };
  const auto named = namedAllocation(boundByThirdBind(), find);
  ASSERT_TRUE(named.has_value());
  EXPECT_EQ(named->uid, "uid-c");
  EXPECT_EQ(named->allocation, 3);
  EXPECT_FALSE(named->holding);
  EXPECT_EQ(asked, std::vector<std::string>{"default/c"});

  auto elsewhere = boundByThirdBind();
  elsewhere.claimRef->ns = "other";
  EXPECT_FALSE(namedAllocation(elsewhere, find).has_value()) << "not in the caller's cache";
  EXPECT_FALSE(namedAllocation(device("gpu-1", "n1", {}), find).has_value()) << "names no claim";
  EXPECT_EQ(asked.size(), 2u) << "a device naming no claim is not looked up";
}

TEST(FreedByClaim, AFreedDeviceIsOfferedOnlyWithItsClaimKnownAndWhileUsable) {
  const auto d = boundByThirdBind();
  const std::optional<ClaimAllocation> released = ClaimAllocation{"uid-c", 3, false};
  EXPECT_TRUE(offerable(d, released));
  EXPECT_FALSE(offerable(d)) << "a claim the caller has not seen counts as holding";
  auto unhealthy = d;
  unhealthy.reason = "DeviceUnhealthy";
  EXPECT_FALSE(offerable(unhealthy, released));
  auto deleting = d;
  deleting.meta.deleting = true;
  EXPECT_FALSE(offerable(deleting, released));
}

TEST(FreedByClaim, ClaimsHoldWhileBoundLostOrUnreadable) {
  auto c = claim("c", 1);
  c.meta.uid = "uid-c";
  c.allocation = 3;
  EXPECT_FALSE(allocationOf(c).holding) << "Pending";
  c.phase = ClaimPhase::kBound;
  EXPECT_TRUE(allocationOf(c).holding);
  c.phase = ClaimPhase::kLost;
  EXPECT_TRUE(allocationOf(c).holding);
  c.phase = ClaimPhase::kPending;
  c.statusReadable = false;
  EXPECT_TRUE(allocationOf(c).holding);
  EXPECT_EQ(allocationOf(c).allocation, 3);
  EXPECT_EQ(allocationOf(c).uid, "uid-c");
}

TEST(Reachability, LabelsDecideWhenKnownAndCountAsYesWhenNot) {
  auto d = device("gpu-0", "n1", {});
  EXPECT_TRUE(reachable(d, "n1", {}));
  EXPECT_FALSE(reachable(d, "n2", {}));
  EXPECT_TRUE(mayBeReachable(d, "n1"));
  EXPECT_FALSE(mayBeReachable(d, "n2"));

  d.nodeAffinity.terms = {NodeSelectorTerm{{{"zone", SelectorOperator::kIn, {"a"}}}, {}}};
  EXPECT_TRUE(reachable(d, "n2", {{"zone", "a"}}));
  EXPECT_FALSE(reachable(d, "n2", {{"zone", "b"}}));
  EXPECT_TRUE(mayBeReachable(d, "n2"));

  d.nodeAffinity.terms = {NodeSelectorTerm{}};
  EXPECT_FALSE(reachable(d, "n1", {}));
  EXPECT_FALSE(mayBeReachable(d, "n1"));
  d.nodeAffinity.terms.clear();
  EXPECT_FALSE(mayBeReachable(d, "n1"));
}

TEST(Suitability, ADistinctPropertyWantsAValueOfItsOwnOnEachDevice) {
  ExtendedResourceClaim c;
  c.rawResourceName = "nvidia.com/gpu";
  c.constraints = {{"numa", ""}, {"", "root"}};
  const std::map<std::string, std::string> a = {{"numa", "0"}, {"root", "x"}};
  const std::map<std::string, std::string> b = {{"numa", "0"}, {"root", "y"}};
  const std::map<std::string, std::string> sameRoot = {{"numa", "0"}, {"root", "x"}};
  const std::map<std::string, std::string> otherNuma = {{"numa", "1"}, {"root", "z"}};
  const std::map<std::string, std::string> lacking = {{"numa", "0"}};
  EXPECT_EQ(distinctProperty(c), "root");
  EXPECT_EQ(constraintKey(c, a), constraintKey(c, b));  // the distinct value is no part of it
  EXPECT_TRUE(meetConstraints(c, {&a, &b}));
  EXPECT_FALSE(meetConstraints(c, {&a, &sameRoot}));
  EXPECT_FALSE(meetConstraints(c, {&a, &otherNuma}));
  EXPECT_FALSE(selectedBy(c, lacking));
}

TEST(Suitability, ConstraintsGroupDevicesByTheirProperties) {
  ExtendedResourceClaim c;
  c.rawResourceName = "nvidia.com/gpu";
  c.constraints = {{"numa"}, {"root"}};
  const std::map<std::string, std::string> a = {{"numa", "0"}, {"root", "x"}};
  const std::map<std::string, std::string> b = {{"numa", "0"}, {"root", "x"}, {"type", "k80"}};
  const std::map<std::string, std::string> other = {{"numa", "0"}, {"root", "y"}};
  const std::map<std::string, std::string> lacking = {{"numa", "0"}};
  EXPECT_EQ(constraintKey(c, a), constraintKey(c, b));
  EXPECT_NE(constraintKey(c, a), constraintKey(c, other));
  EXPECT_EQ(constraintKey(c, lacking), std::nullopt);
  EXPECT_TRUE(meetConstraints(c, {&a, &b}));
  EXPECT_FALSE(meetConstraints(c, {&a, &other}));
  EXPECT_FALSE(meetConstraints(c, {&lacking}));
  // A device lacking a constrained property cannot serve the claim at all.
  EXPECT_FALSE(selectedBy(c, lacking));
  EXPECT_TRUE(selectedBy(c, a));
  // No constraints: every set meets them.
  ExtendedResourceClaim free;
  EXPECT_EQ(constraintKey(free, lacking), "");
  EXPECT_TRUE(meetConstraints(free, {&a, &other}));
}

}  // namespace
}  // namespace ker
