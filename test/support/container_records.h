#pragma once

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

// What the real-node soak's containers record from inside (test/e2e/soak_test.cpp writes the
// script), and the check of the promise per container against those records. Pure: text in,
// violations out.
namespace ker::testsupport {

// One container's record. Times are the host's uptime in seconds: one clock for every
// container of every node on this machine.
struct ContainerRecord {
  std::string file, pod, uid, node;
  bool shared = false;                // its pod joined the shareable claim
  std::set<std::string> ids;          // the device IDs in its variable
  std::set<std::string> deviceNodes;  // the /dev/ker-* it saw
  nlohmann::json allocation;          // its pod's allocation annotation (downward API)
  double start = -1;
  double end = -1;  // its stop line, else its last beat (a second late at most)
};

// Parses a record: "key value" lines (pod, uid, node, shared, ids, devs, alloc, start, then
// beat lines and at most one stop line).
ContainerRecord parseContainerRecord(const std::string& file, const std::string& text);

// A time a node's agent could not answer the runtime (stalled, or killed until its successor
// runs), in the records' clock.
struct AgentOutage {
  std::string node;
  double from = 0;
  double to = 0;
};

// How long after its node's agent answers again a container that the runtime let through
// without its devices (its request to the stalled agent timed out, or the agent died answering
// it) may still run: the agent stops it at once, and the kubelet starts it again with its
// devices.
inline constexpr double kLetThroughBoundSeconds = 5;

// What breaks the promise: a container that ran without devices (unless it started during an
// outage of its node's agent and ended within kLetThroughBoundSeconds of it), one that saw
// other devices (IDs or device nodes /dev/ker-NAME) than its pod's allocation, and two pods'
// containers holding one device at overlapping times unless both joined the shareable claim.
// One message per violation; *letThrough counts the containers excused by an outage.
std::vector<std::string> promiseViolations(const std::vector<ContainerRecord>& records,
                                           const std::vector<AgentOutage>& outages = {},
                                           int* letThrough = nullptr);

}  // namespace ker::testsupport
