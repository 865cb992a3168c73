#include "test/support/container_records.h"

#include <gtest/gtest.h>

namespace ker::testsupport {
namespace {

// A record as the soak's container script writes it: holding device NAME (ID NAME-id) from
// start to end.
std::string recordText(const std::string& pod, const std::string& uid,
                       const std::vector<std::string>& devices, double start, double end,
                       bool shared = false) {
  std::string ids, devs;
  nlohmann::json alloc = nlohmann::json::array();
  for (const auto& d : devices) {
    ids += (ids.empty() ? "" : ",") + d + "-id";
    devs += "ker-" + d + " ";
    alloc.push_back({{"name", d}, {"deviceID", d + "-id"}, {"rawResourceName", "r"}});
  }
  return "pod " + pod + "\nuid " + uid + "\nnode n1\nshared " + (shared ? "true" : "false") +
         "\nids " + ids + "\ndevs " + devs + "\nalloc " + nlohmann::json{{"claim", alloc}}.dump() +
         "\nstart " + std::to_string(start) + "\nbeat " + std::to_string(start + 1) + "\nstop " +
         std::to_string(end) + "\n";
}

ContainerRecord record(const std::string& pod, const std::string& uid,
                       const std::vector<std::string>& devices, double start, double end,
                       bool shared = false) {
  return parseContainerRecord(pod + ".rec", recordText(pod, uid, devices, start, end, shared));
}

TEST(ContainerRecordsTest, ParsesWhatTheContainerScriptWrites) {
  const ContainerRecord r = record("p", "u1", {"a", "b"}, 10, 20.5);
  EXPECT_EQ(r.pod, "p");
  EXPECT_EQ(r.uid, "u1");
  EXPECT_EQ(r.node, "n1");
  EXPECT_EQ(r.ids, (std::set<std::string>{"a-id", "b-id"}));
  EXPECT_EQ(r.deviceNodes, (std::set<std::string>{"ker-a", "ker-b"}));
  EXPECT_DOUBLE_EQ(r.start, 10);
  EXPECT_DOUBLE_EQ(r.end, 20.5);
}

TEST(ContainerRecordsTest, AKilledContainerEndsAtItsLastBeat) {
  const ContainerRecord r =
      parseContainerRecord("f", "pod p\nuid u\nids a-id\nstart 5\nbeat 6\nbeat 7\n");
  EXPECT_DOUBLE_EQ(r.end, 7);
  EXPECT_DOUBLE_EQ(parseContainerRecord("f", "pod p\nstart 5\n").end, 5);
}

TEST(ContainerRecordsTest, HoldersOneAfterAnotherAreFine) {
  EXPECT_TRUE(
      promiseViolations({record("p1", "u1", {"a"}, 0, 10), record("p2", "u2", {"a"}, 10.5, 20),
                         record("p3", "u3", {"b"}, 0, 20)})
          .empty());
}

TEST(ContainerRecordsTest, TwoPodsHoldingOneDeviceAtOnceIsAViolation) {
  const auto v =
      promiseViolations({record("p1", "u1", {"a"}, 0, 10), record("p2", "u2", {"a", "b"}, 9, 20)});
  ASSERT_EQ(v.size(), 1u);
  EXPECT_NE(v[0].find("a-id held by p1"), std::string::npos) << v[0];
}

TEST(ContainerRecordsTest, OnlyTheShareableClaimsPodsMayShare) {
  EXPECT_TRUE(promiseViolations(
                  {record("s1", "u1", {"a"}, 0, 10, true), record("s2", "u2", {"a"}, 5, 20, true)})
                  .empty());
  EXPECT_EQ(
      promiseViolations({record("s1", "u1", {"a"}, 0, 10, true), record("p2", "u2", {"a"}, 5, 20)})
          .size(),
      1u);
}

TEST(ContainerRecordsTest, ARestartedContainerOfThePodIsNotASecondHolder) {
  EXPECT_TRUE(promiseViolations({record("p", "u1", {"a"}, 0, 10), record("p", "u1", {"a"}, 5, 20)})
                  .empty());
}

TEST(ContainerRecordsTest, AContainerWithoutDevicesOrWithOthersThanItsAllocationIsAViolation) {
  ContainerRecord none = record("p1", "u1", {"a"}, 0, 10);
  none.ids.clear();
  ContainerRecord other = record("p2", "u2", {"b"}, 0, 10);
  other.deviceNodes = {"ker-b", "ker-c"};
  const auto v = promiseViolations({none, other});
  ASSERT_EQ(v.size(), 2u);
  EXPECT_NE(v[0].find("ran without its devices"), std::string::npos) << v[0];
  EXPECT_NE(v[1].find("ker-c"), std::string::npos) << v[1];
}

TEST(ContainerRecordsTest, OnlyAContainerLetThroughByAStalledAgentAndStoppedInTimeIsExcused) {
  ContainerRecord r = record("p", "u1", {"a"}, 100, 101);
  r.ids.clear();
  int excused = -1;
  // Started while its node's agent was stalled, ended within the bound after.
  EXPECT_TRUE(promiseViolations({r}, {{"n1", 95, 100.5}}, &excused).empty());
  EXPECT_EQ(excused, 1);
  // Another node's outage, one that ended before it started, or running on past the bound.
  EXPECT_EQ(promiseViolations({r}, {{"n2", 95, 100.5}}).size(), 1u);
  EXPECT_EQ(promiseViolations({r}, {{"n1", 90, 99}}).size(), 1u);
  r.end = 100.5 + kLetThroughBoundSeconds + 1;
  EXPECT_EQ(promiseViolations({r}, {{"n1", 95, 100.5}}, &excused).size(), 1u);
  EXPECT_EQ(excused, 0);
}

}  // namespace
}  // namespace ker::testsupport
