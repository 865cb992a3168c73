// Preemption for devices on the real node: the extender's filter chooses the victims among
// lower-priority holders, its worker deletes them with their grace period, the kubelet stops
// their containers with SIGTERM, the controller releases their claims once the kubelet reports
// them stopped, and only then is the preemptor bound and its container started, with the
// device the victim held.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include "common/resource.h"
#include "e2e_fixture.h"
#include "test/integration/priority_classes.h"

namespace ker::e2e {
namespace {

constexpr int kVictimGraceSeconds = 10;

// One change to a pod of the namespace, in the API server's order.
struct PodChange {
  WatchEventType type;
  json pod;
};

class PreemptionTest : public E2eTest {
 protected:
  void SetUp() override {
    E2eTest::SetUp();
    if (IsSkipped()) {
      return;
    }
    priorityClasses_.emplace(*api_);
    // On "the host", which is also the node; TearDown removes it.
    markerDir_ = "/run/ker-e2e-markers-" + ns_;
    std::filesystem::create_directory(markerDir_);
  }

  void TearDown() override {
    stopWatch();
    E2eTest::TearDown();
    if (priorityClasses_) {
      priorityClasses_->removeAll();
    }
    if (!markerDir_.empty()) {
      std::error_code ignored;
      std::filesystem::remove_all(markerDir_, ignored);
    }
  }

  std::string priorityClass(int value) { return priorityClasses_->create(value); }

  // A busybox pod of PriorityClass pc claiming `claim`, with this test's marker folder
  // mounted at /marker.
  void createPodOf(const std::string& name, const std::string& claim, const std::string& pc,
                   const std::string& script, int graceSeconds) {
    json pod = busyboxPod(name, {claim}, script, graceSeconds);
    pod["spec"]["priorityClassName"] = pc;
    pod["spec"]["volumes"] = json::array(
        {{{"name", "marker"}, {"hostPath", {{"path", markerDir_}, {"type", "Directory"}}}}});
    pod["spec"]["containers"][0]["volumeMounts"] =
        json::array({{{"name", "marker"}, {"mountPath", "/marker"}}});
    ASSERT_TRUE(itest::createPodOnceAdmitted(*api_, ns_, pod, 30s, 200ms))
        << "PriorityClass " << pc << " never admitted";
  }

  // Records every change to the namespace's pods from now on, in order.
  void startWatch() {
    const std::string rv =
        api_->list(resources::kPods, ns_, {}).value("/metadata/resourceVersion"_json_pointer, "");
    watcher_ = std::thread([this, rv] {
      try {
        api_->watch(
            resources::kPods, ns_,
            WatchOptions{
                .resourceVersion = rv, .allowWatchBookmarks = false, .timeoutSeconds = 900},
            [&](const WatchEvent& e) {
              std::lock_guard lock(mu_);
              changes_.push_back({e.type, e.object});
              return true;
            },
            &stopWatch_);
      } catch (const std::exception& e) {
        std::lock_guard lock(mu_);
        watchError_ = e.what();
      }
    });
  }

  // Stops recording; returns the changes seen.
  std::vector<PodChange> stopWatch() {
    stopWatch_ = true;
    if (watcher_.joinable()) {
      watcher_.join();
    }
    std::lock_guard lock(mu_);
    return changes_;
  }

  // What the victim's SIGTERM trap wrote, empty when it never ran.
  std::string marker(const std::string& pod) const {
    std::ifstream in(markerDir_ + "/" + pod);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  std::string markerDir_;
  std::optional<itest::PriorityClasses> priorityClasses_;  // from SetUp on, on a real node
  std::string watchError_;

 private:
  std::thread watcher_;
  std::atomic<bool> stopWatch_{false};
  std::mutex mu_;
  std::vector<PodChange> changes_;
};

std::string nameOf(const json& pod) {
  return pod.value("/metadata/name"_json_pointer, std::string());
}

bool terminal(const json& pod) {
  const std::string phase = pod.value("/status/phase"_json_pointer, std::string());
  return phase == "Succeeded" || phase == "Failed";
}

// The index of the first change to `pod` that satisfies `pred`; -1 when none does.
int firstChange(const std::vector<PodChange>& changes, const std::string& pod,
                const std::function<bool(const PodChange&)>& pred) {
  for (size_t i = 0; i < changes.size(); ++i) {
    if (nameOf(changes[i].pod) == pod && pred(changes[i])) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

// Records SIGTERM in /marker/<name>, takes a few seconds to stop as real workloads do, and
// exits 0: the only way out of its loop, so exit code 0 means the trap ran to its end.
std::string victimScript(const std::string& name) {
  const std::string file = "/marker/" + name;
  return "trap 'echo term >> " + file + "; sleep 3; echo exit >> " + file +
         "; exit 0' TERM; echo up; while true; do sleep 1; done";
}

// Two devices, each held by a running low-priority pod whose container traps SIGTERM, and a
// pending pod of the same low priority. A high-priority pod claiming one device arrives: one
// holder is deleted with its grace period and stops gracefully; the preemptor is bound only
// after the victim's container stopped, gets the device it freed, and the pending pod gets
// nothing.
TEST_F(PreemptionTest, TheVictimStopsGracefullyBeforeThePreemptorStartsOnItsDevice) {
  const std::string low = priorityClass(10);
  const std::string high = priorityClass(1000);
  createDevice(uniqueName("gpu"));
  createDevice(uniqueName("gpu"));
  std::map<std::string, std::string> deviceOf;
  for (const std::string pod : {"low-0", "low-1"}) {
    createClaim(pod);
    createPodOf(pod, pod, low, victimScript(pod), kVictimGraceSeconds);
  }
  for (const std::string pod : {"low-0", "low-1"}) {
    ASSERT_TRUE(eventually([&] { return podRunning(pod); }, 120s)) << pod << ": " << podPhase(pod);
    // The trap is set before "up" is printed.
    ASSERT_TRUE(eventually([&] { return logs(pod).find("up") != std::string::npos; }, 30s));
    const auto devices = allocated(pod);
    ASSERT_EQ(devices.size(), 1u) << pod;
    deviceOf[pod] = devices[0];
  }
  ASSERT_NE(deviceOf["low-0"], deviceOf["low-1"]);
  createClaim("third");
  createPodOf("third", "third", low, "exec sleep 3600", 1);
  ASSERT_TRUE(eventually([&] { return !eventMessages("third", "FailedScheduling").empty(); }, 60s));

  startWatch();
  createClaim("high");
  createPodOf("high", "high", high,
              "echo \"ids=$" + deviceEnvName() +
                  "\"; for f in /dev/ker-*; do echo \"node=$f\"; done; exec sleep 3600",
              1);
  ASSERT_TRUE(eventually([&] { return podRunning("high"); }, 180s))
      << podPhase("high") << "; FailedScheduling: "
      << testing::PrintToString(eventMessages("high", "FailedScheduling"));
  // Exactly one holder was preempted; it goes once the kubelet has stopped it.
  std::vector<std::string> victims;
  for (const std::string pod : {"low-0", "low-1"}) {
    auto p = getPod(pod);
    if (!p || p->contains("/metadata/deletionTimestamp"_json_pointer)) {
      victims.push_back(pod);
    }
  }
  ASSERT_EQ(victims.size(), 1u) << testing::PrintToString(victims);
  const std::string victim = victims[0];
  const std::string survivor = victim == "low-0" ? "low-1" : "low-0";
  ASSERT_TRUE(eventually([&] { return !getPod(victim).has_value(); }, 60s))
      << victim << " was not removed";
  const std::vector<PodChange> changes = stopWatch();
  ASSERT_EQ(watchError_, "");

  // The victim was deleted with its grace period (not forced), marked as kube-scheduler marks
  // its victims.
  const int deleting = firstChange(changes, victim, [](const PodChange& c) {
    return c.pod.contains("/metadata/deletionTimestamp"_json_pointer);
  });
  ASSERT_GE(deleting, 0) << victim << " was never seen terminating";
  const json& terminating = changes[deleting].pod;
  EXPECT_EQ(terminating.value("/metadata/deletionGracePeriodSeconds"_json_pointer, -1),
            kVictimGraceSeconds)
      << terminating["metadata"].dump();
  EXPECT_FALSE(terminal(terminating)) << "deleted only once stopped: " << terminating.dump();
  EXPECT_NE(
      terminating["status"].value("conditions", json::array()).dump().find("PreemptionByScheduler"),
      std::string::npos)
      << terminating["status"].dump();
  // Its container got SIGTERM, ran its trap to the end and exited 0 within the grace period.
  EXPECT_EQ(marker(victim), "term\nexit\n");
  EXPECT_EQ(marker(survivor), "");
  const int stopped = firstChange(changes, victim, [](const PodChange& c) {
    return terminal(c.pod) || c.type == WatchEventType::kDeleted;
  });
  ASSERT_GE(stopped, 0) << victim << " never reported stopped";
  const json& stoppedPod = changes[stopped].pod;
  const json state =
      stoppedPod.value("/status/containerStatuses/0/state/terminated"_json_pointer, json::object());
  EXPECT_EQ(state.value("exitCode", -1), 0) << stoppedPod["status"].dump();
  const std::string victimFinishedAt = state.value("finishedAt", "");
  ASSERT_FALSE(victimFinishedAt.empty()) << stoppedPod["status"].dump();
  EXPECT_TRUE(eventually([&] { return !eventMessages(victim, "Killing").empty(); }, 30s));
  EXPECT_TRUE(eventually([&] { return !eventMessages(victim, "Preempted").empty(); }, 30s));
  EXPECT_TRUE(eventually([&] { return !eventMessages("high", "Preempting").empty(); }, 30s));

  // The preemptor was nominated while the victim terminated, and bound only after the kubelet
  // reported the victim's container stopped.
  const int nominated = firstChange(changes, "high", [&](const PodChange& c) {
    return c.pod.value("/status/nominatedNodeName"_json_pointer, std::string()) == node();
  });
  const int bound = firstChange(changes, "high", [](const PodChange& c) {
    return !c.pod.value("/spec/nodeName"_json_pointer, std::string()).empty();
  });
  ASSERT_GE(bound, 0);
  EXPECT_GE(nominated, 0) << "the preemptor's nominatedNodeName never named " << node();
  EXPECT_LT(nominated, bound);
  EXPECT_GT(bound, stopped) << "the preemptor was bound while its victim's container ran";
  // And its container started after the victim's had finished (RFC 3339 timestamps of one
  // format compare as strings).
  const std::string highStartedAt = getPod("high")->value(
      "/status/containerStatuses/0/state/running/startedAt"_json_pointer, std::string());
  ASSERT_FALSE(highStartedAt.empty());
  EXPECT_LE(victimFinishedAt, highStartedAt);

  // The preemptor has the device the victim held, injected by the node agent.
  EXPECT_EQ(allocated("high"), std::vector<std::string>{deviceOf[victim]});
  std::string out;
  ASSERT_TRUE(
      eventually([&] { return (out = logs("high")).find("ids=") != std::string::npos; }, 30s));
  EXPECT_NE(out.find("ids=" + deviceOf[victim] + "-id\n"), std::string::npos) << out;
  EXPECT_NE(out.find("node=" + containerDeviceNode(deviceOf[victim]) + "\n"), std::string::npos)
      << out;
  EXPECT_EQ(out.find(deviceOf[survivor]), std::string::npos) << out;

  // The survivor and the pending pod of the victim's priority are untouched.
  EXPECT_TRUE(podRunning(survivor));
  EXPECT_FALSE(getPod(survivor)->contains("/metadata/deletionTimestamp"_json_pointer));
  EXPECT_EQ(allocated(survivor), std::vector<std::string>{deviceOf[survivor]});
  EXPECT_TRUE(eventMessages(survivor, "Preempted").empty());
  EXPECT_EQ(podPhase("third"), "Pending");
  EXPECT_TRUE(allocated("third").empty());
}

}  // namespace
}  // namespace ker::e2e
