// Devices named by CDI on the real node: containerd applies the vendor's spec for exactly the
// devices the node agent names for a container (device node, library mount, environment), a
// device whose spec is gone makes its container's creation fail with the agent's reason rather
// than start without it, and that device turns unhealthy. The agent also finds devices itself,
// from the specs and from a command, and follows them while pods run.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "common/api_error.h"
#include "common/resource.h"
#include "e2e_fixture.h"
#include "model/objects.h"

namespace ker::e2e {
namespace {

constexpr const char* kKind = "e2e.example.com/gpu";

class CdiTest : public E2eTest {
 protected:
  void TearDown() override {
    if (discovering_) {
      editWholeNodeFile([](json& file) { file.erase("discover"); });
    }
    E2eTest::TearDown();
    if (!specPath_.empty()) {
      std::filesystem::remove(specPath_);
    }
    for (const auto& path : hostFiles_) {
      std::filesystem::remove(path);
    }
  }

  std::string hostRoot() const { return env_->value("NODE_AGENT_HOST_ROOT"); }
  static std::string cdiName(const std::string& device) {
    return std::string(kKind) + "=" + device;
  }

  // A vendor's spec in the node's /var/run/cdi defining `devices`, each with a device node
  // /dev/cdi-<name>, a library /usr/lib/cdi/<name>.so and CDI_DEVICE=<name>, as generators
  // write them (host paths are absolute: containerd reads them directly).
  void writeSpec(const std::vector<std::string>& devices, const std::string& kind = kKind) {
    std::filesystem::create_directories(hostRoot() + "/cdi-libs");
    json spec = {{"cdiVersion", "0.6.0"}, {"kind", kind}, {"devices", json::array()}};
    for (const auto& d : devices) {
      const std::string node = hostRoot() + "/dev/ker-cdi-" + d;
      const std::string lib = hostRoot() + "/cdi-libs/" + d + ".so";
      if (::access(node.c_str(), F_OK) != 0) {
        ASSERT_EQ(::mknod(node.c_str(), S_IFCHR | 0666, makedev(1, 3)), 0) << node;
        ::chmod(node.c_str(), 0666);
        hostFiles_.push_back(node);
      }
      std::ofstream(lib) << "library of " << d << "\n";
      hostFiles_.push_back(lib);
      spec["devices"].push_back(
          {{"name", d},
           {"containerEdits",
            {{"env", {"CDI_DEVICE=" + d}},
             {"deviceNodes", {{{"path", "/dev/cdi-" + d}, {"hostPath", node}}}},
             {"mounts",
              {{{"hostPath", lib},
                {"containerPath", "/usr/lib/cdi/" + d + ".so"},
                {"options", {"ro", "nosuid", "nodev", "bind"}}}}}}}});
    }
    specPath_ = hostRoot() + "/var/run/cdi/" + ns_ + ".json";
    const std::string tmp = specPath_ + ".tmp";
    std::ofstream(tmp) << spec.dump(2);
    ASSERT_EQ(std::rename(tmp.c_str(), specPath_.c_str()), 0);
  }

  // A device of the node file named by its CDI name only: the spec gives it everything.
  void addCdiDevice(const std::string& name) {
    editNodeFile([&](json& devices) {
      devices.push_back({{"name", name},
                         {"rawResourceName", resource_},
                         {"deviceID", name + "-id"},
                         {"properties", {{"type", "k80"}}},
                         {"cdiDevice", cdiName(name)}});
    });
    devices_.push_back(name);
    ASSERT_TRUE(awaitPublished(name));
  }

  // Whether a device of this test's is Available in the API; withdrawn: gone or deleted.
  bool available(const std::string& name) {
    try {
      return getDevice(name).value("/status/phase"_json_pointer, std::string()) == "Available";
    } catch (const ApiError&) {
      return false;
    }
  }
  bool withdrawn(const std::string& name) {
    try {
      return getDevice(name).contains("/metadata/deletionTimestamp"_json_pointer);
    } catch (const ApiError& e) {
      return e.isNotFound();
    }
  }

  std::string specPath_;
  std::vector<std::string> hostFiles_;
  bool discovering_ = false;
};

// Prints what the vendor's spec gave the container, and keeps running.
const char* kShowCdi =
    "echo \"env=$CDI_DEVICE\"; for f in /dev/cdi-*; do echo \"node=$f\"; done; "
    "for f in /usr/lib/cdi/*; do echo \"lib=$f:$(cat $f)\"; done; echo done; exec sleep 3600";

TEST_F(CdiTest, EachContainerGetsItsOwnDevicesCdiEditsAndNoneOfTheOthers) {
  const std::string a = uniqueName("cdi");
  const std::string b = uniqueName("cdi");
  ASSERT_NO_FATAL_FAILURE(writeSpec({a, b}));
  ASSERT_NO_FATAL_FAILURE(addCdiDevice(a));
  ASSERT_NO_FATAL_FAILURE(addCdiDevice(b));
  createClaim("ca");
  createClaim("cb");
  createPod(busyboxPod("pa", {"ca"}, kShowCdi));
  createPod(busyboxPod("pb", {"cb"}, kShowCdi));
  std::map<std::string, std::string> own;
  for (const auto& [pod, claim] : {std::pair{"pa", "ca"}, std::pair{"pb", "cb"}}) {
    ASSERT_TRUE(eventually([&] { return podRunning(pod); }, 120s)) << pod << ": " << podPhase(pod);
    own[pod] = getClaim(claim)["status"]["extendedResourceNames"][0].get<std::string>();
  }
  ASSERT_NE(own["pa"], own["pb"]);
  for (const auto& [pod, other] : {std::pair{"pa", "pb"}, std::pair{"pb", "pa"}}) {
    std::string out;
    ASSERT_TRUE(
        eventually([&] { return (out = logs(pod)).find("done") != std::string::npos; }, 30s))
        << out;
    const std::string& d = own[pod];
    EXPECT_NE(out.find("env=" + d + "\n"), std::string::npos) << out;
    EXPECT_NE(out.find("node=/dev/cdi-" + d + "\n"), std::string::npos) << out;
    EXPECT_NE(out.find("lib=/usr/lib/cdi/" + d + ".so:library of " + d + "\n"), std::string::npos)
        << out;
    EXPECT_EQ(out.find(own[other]), std::string::npos) << pod << " sees " << own[other] << ":\n"
                                                       << out;
  }
}

// The spec is removed while a pod holds the device: the container's next creation is refused
// with the agent's reason (never started without the device), the device turns unhealthy, and
// once the spec is back the container runs again with its device.
TEST_F(CdiTest, ADeviceWhoseSpecIsGoneIsRefusedAndUnhealthyUntilItReturns) {
  const std::string d = uniqueName("cdi");
  ASSERT_NO_FATAL_FAILURE(writeSpec({d}));
  ASSERT_NO_FATAL_FAILURE(addCdiDevice(d));
  createClaim("c");
  // Runs briefly and exits, so the kubelet creates the container again.
  createPod(busyboxPod("p", {"c"}, "echo \"env=$CDI_DEVICE\"; sleep 2; exit 1", 1, "Always"));
  std::string out;
  ASSERT_TRUE(
      eventually([&] { return (out = logs("p")).find("env=" + d) != std::string::npos; }, 120s))
      << out << podPhase("p");

  const std::string spec = specPath_;
  const std::string saved = spec + ".saved";
  ASSERT_EQ(std::rename(spec.c_str(), saved.c_str()), 0);
  const std::string reason =
      "CDI device " + cdiName(d) + " of device " + d + " is in no spec under /etc/cdi,/var/run/cdi";
  std::string failures;
  EXPECT_TRUE(eventually(
      [&] {
        failures.clear();
        for (const auto& m : eventMessages("p", "Failed")) {
          failures += m + "\n";
        }
        return failures.find(reason) != std::string::npos;
      },
      120s))
      << failures;
  EXPECT_TRUE(eventually(
      [&] { return conditionOf(getDevice(d), "Healthy").value("status", "") == "False"; }, 30s))
      << getDevice(d).dump();

  ASSERT_EQ(std::rename(saved.c_str(), spec.c_str()), 0);
  const int restarts = kubectlJson("get pod p -n " + ns_)
                           .value("/status/containerStatuses/0/restartCount"_json_pointer, 0);
  EXPECT_TRUE(eventually(
      [&] {
        return kubectlJson("get pod p -n " + ns_)
                   .value("/status/containerStatuses/0/restartCount"_json_pointer, 0) > restarts;
      },
      180s))
      << "the container did not run again once the spec was back";
}

// The node file names sources instead of devices: every device of a CDI kind's specs (not its
// "all") and what a command prints. The agent publishes them, a pod gets one with its CDI
// edits, and while it runs the spec and the command's output change: new devices appear, the
// ones they drop are withdrawn, and the pod's device stays.
TEST_F(CdiTest, DevicesDiscoveredFromSpecsAndACommandFollowThemWhilePodsRun) {
  const std::string kind = "disc.example.com/" + uniqueName("k");
  const std::string d1 = uniqueName("d");
  const std::string d2 = uniqueName("d");
  const std::string d3 = uniqueName("d");
  ASSERT_NO_FATAL_FAILURE(writeSpec({d1, d2, "all"}, kind));
  // The command runs in the agent's container, where the node file's folder is
  // /etc/extended-resource.
  const std::string etc = std::filesystem::path(env_->value("NODE_AGENT_FILE")).parent_path();
  const std::string output = etc + "/" + ns_ + ".json";
  const std::string cmdId = uniqueName("cmd");
  const std::string cmdNode = hostRoot() + "/dev/ker-" + cmdId;
  ASSERT_EQ(::mknod(cmdNode.c_str(), S_IFCHR | 0666, makedev(1, 3)), 0) << cmdNode;
  hostFiles_.insert(hostFiles_.end(), {cmdNode, output});
  auto print = [&](const json& devices) {
    std::ofstream(output + ".tmp") << json{{"devices", devices}}.dump();
    std::filesystem::rename(output + ".tmp", output);
  };
  print({{{"id", cmdId}, {"deviceNodes", {"/dev/ker-" + cmdId}}}});
  editWholeNodeFile([&](json& file) {
    file["discover"] = {{{"rawResourceName", resource_},
                         {"properties", {{"type", "k80"}}},
                         {"cdi", {{"kind", kind}}}},
                        {{"rawResourceName", resource_},
                         {"properties", {{"type", "k80"}}},
                         {"command", {"/bin/cat", "/etc/extended-resource/" + ns_ + ".json"}}}};
  });
  discovering_ = true;
  const std::string n1 = node() + "-" + d1;
  const std::string n2 = node() + "-" + d2;
  const std::string n3 = node() + "-" + d3;
  const std::string nc = node() + "-" + cmdId;
  ASSERT_TRUE(eventually([&] { return available(n1) && available(n2) && available(nc); }, 60s));
  EXPECT_TRUE(withdrawn(node() + "-all"));
  EXPECT_EQ(getDevice(n1)["spec"]["deviceID"], d1);

  json claim = itest::claimObject(ns_, "c", resource_, 1, {{"type", "k80"}});
  claim["spec"]["extendedResourceNames"] = {n1};
  api_->create(resources::kExtendedResourceClaims, ns_, claim);
  createPod(busyboxPod("p", {"c"}, kShowCdi));
  ASSERT_TRUE(eventually([&] { return podRunning("p"); }, 120s)) << podPhase("p");
  std::string out;
  ASSERT_TRUE(eventually([&] { return (out = logs("p")).find("done") != std::string::npos; }, 30s));
  EXPECT_NE(out.find("env=" + d1 + "\n"), std::string::npos) << out;

  ASSERT_NO_FATAL_FAILURE(writeSpec({d1, d3}, kind));
  print(json::array());
  EXPECT_TRUE(eventually([&] { return available(n3); }, 60s));
  EXPECT_TRUE(eventually([&] { return withdrawn(n2) && withdrawn(nc); }, 60s));
  EXPECT_FALSE(withdrawn(n1));
  EXPECT_EQ(getDevice(n1).value("/status/phase"_json_pointer, std::string()), "Bound");
  EXPECT_TRUE(podRunning("p"));
}

}  // namespace
}  // namespace ker::e2e
