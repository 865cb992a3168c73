#include "e2e_fixture.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <string>
#include <utility>

#include "agent/node_file.h"
#include "common/api_error.h"
#include "common/resource.h"
#include "model/objects.h"

namespace ker::e2e {

void E2eTest::SetUp() {
  env_ = TestEnv::get();
  if (env_ == nullptr || !env_->has("NODE_NAME")) {
    GTEST_SKIP() << "no real node: run the end-to-end tests with `make e2e-test` (or "
                    "test/run-e2e.sh BUILD_DIR), which starts one for them";
  }
  env_->ensureCrds();
  api_ = &env_->admin();
  node_ = env_->value("NODE_NAME");
  ns_ = itest::createNamespace(*api_, "e2e");
  resource_ = "e2e.example.com/" + uniqueName("dev");
}

void E2eTest::TearDown() {
  if (api_ == nullptr) {
    return;
  }
  // The namespace controller removes the pods (through the kubelet) and claims; the devices are
  // cluster-scoped and go once nothing holds them.
  try {
    api_->remove(resources::kNamespaces, "", ns_);
  } catch (const ApiError&) {
  }
  // The agent withdraws the devices once the file no longer lists them.
  for (const auto& d : std::vector<std::string>(devices_)) {
    removeDeviceFromNodeFile(d);
  }
  for (const auto& [device, node] : deviceFiles_) {
    ::unlink(hostDeviceNode(device, node).c_str());
  }
}

std::vector<std::string> E2eTest::nodes() const {
  if (!env_->has("NODES")) {
    return {node_};
  }
  std::vector<std::string> out;
  std::istringstream list(env_->value("NODES"));
  for (std::string name; std::getline(list, name, ',');) {
    out.push_back(name);
  }
  return out;
}

std::string E2eTest::nodeValue(const std::string& node, const std::string& key) const {
  if (node.empty() || node == node_) {
    return env_->value(key);
  }
  // launch.sh start-node writes a further node's keys to DIR/nodes/NAME/env.
  const std::string file = env_->dir() + "/nodes/" + node + "/env";
  const auto values = itest::readEnvFile(file);
  if (auto it = values.find(key); it != values.end()) {
    return it->second;
  }
  throw std::runtime_error(file + " has no " + key);
}

ApiServerCutOff::ApiServerCutOff(const TestEnv& env, const std::string& podIp) {
  if (podIp.empty()) {
    return;
  }
  const std::string port = env.value("APISERVER_PORT");
  const std::string mark = " -m comment --comment ker-e2e-api-server-cut-off -j DROP";
  for (const std::string& rule : {"INPUT -s " + podIp + "/32 -p tcp --dport " + port + mark,
                                  "OUTPUT -d " + podIp + "/32 -p tcp --sport " + port + mark}) {
    if (std::system(("iptables -w -I " + rule).c_str()) != 0) {
      restore();
      return;
    }
    inserted_.push_back(rule);
  }
}

bool ApiServerCutOff::restore() {
  std::vector<std::string> left;
  for (const auto& rule : inserted_) {
    if (std::system(("iptables -w -D " + rule).c_str()) != 0) {
      left.push_back(rule);
    }
  }
  inserted_ = std::move(left);
  return inserted_.empty();
}

json extraNodeToleration() {
  return {{"key", kExtraNodeTaint}, {"operator", "Exists"}, {"effect", "NoSchedule"}};
}

std::string E2eTest::hostDeviceNode(const std::string& name) const {
  for (auto it = deviceFiles_.rbegin(); it != deviceFiles_.rend(); ++it) {
    if (it->first == name) {
      return hostDeviceNode(name, it->second);
    }
  }
  return hostDeviceNode(name, "");
}

std::string E2eTest::hostDeviceNode(const std::string& name, const std::string& node) const {
  return nodeValue(node, "NODE_AGENT_HOST_ROOT") + containerDeviceNode(name);
}

std::string E2eTest::deviceEnvName() const {
  return agent::defaultEnvName(resource_);
}

void E2eTest::editNodeFile(const std::function<void(json& devices)>& edit,
                           const std::string& node) {
  editWholeNodeFile([&](json& file) { edit(file["devices"]); }, node);
}

void E2eTest::editWholeNodeFile(const std::function<void(json& file)>& edit,
                                const std::string& node) {
  const std::string path = nodeValue(node, "NODE_AGENT_FILE");
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  // The file is JSON (a subset of the YAML the agent reads), so the test can edit it.
  json file = json::parse(text.str());
  edit(file);
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << file.dump(2) << "\n";
  }
  ASSERT_EQ(std::rename(tmp.c_str(), path.c_str()), 0) << path;
}

void E2eTest::addDeviceToNodeFile(const std::string& name, const std::string& type,
                                  const std::string& node) {
  deviceFiles_.emplace_back(name, node);
  const std::string path = hostDeviceNode(name, node);
  ASSERT_EQ(::mknod(path.c_str(), S_IFCHR | 0666, makedev(1, 3)), 0) << path;
  ::chmod(path.c_str(), 0666);
  editNodeFile(
      [&](json& devices) {
        devices.push_back({{"name", name},
                           {"rawResourceName", resource_},
                           {"deviceID", name + "-id"},
                           {"properties", {{"type", type}}},
                           {"deviceNodes", {{{"path", containerDeviceNode(name)}}}}});
      },
      node);
  devices_.push_back(name);
}

void E2eTest::createDevice(const std::string& name, const std::string& type,
                           const std::string& node) {
  addDeviceToNodeFile(name, type, node);
  ASSERT_TRUE(awaitPublished(name));
}

::testing::AssertionResult E2eTest::awaitPublished(const std::string& name) {
  const bool available = eventually(
      [&] {
        try {
          return getDevice(name).value("/status/phase"_json_pointer, std::string()) == "Available";
        } catch (const ApiError&) {
          return false;
        }
      },
      60s);
  if (available) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "the node agent did not publish " << name;
}

void E2eTest::removeDeviceFromNodeFile(const std::string& name) {
  std::vector<std::string> files = {""};
  for (const auto& [device, node] : deviceFiles_) {
    if (device == name && std::find(files.begin(), files.end(), node) == files.end()) {
      files.push_back(node);
    }
  }
  for (const auto& node : files) {
    takeNodeFileEntry(name, node);
  }
}

json E2eTest::takeNodeFileEntry(const std::string& name, const std::string& node) {
  json entry;
  editNodeFile(
      [&](json& devices) {
        json kept = json::array();
        for (auto& d : devices) {
          if (d.value("name", "") == name) {
            entry = std::move(d);
          } else {
            kept.push_back(std::move(d));
          }
        }
        devices = std::move(kept);
      },
      node);
  return entry;
}

std::vector<std::string> E2eTest::allocated(const std::string& claim) {
  std::vector<std::string> out;
  for (const auto& d :
       getClaim(claim).value("/status/extendedResourceNames"_json_pointer, json::array())) {
    out.push_back(d.get<std::string>());
  }
  return out;
}

void E2eTest::createClaim(const std::string& name, int count) {
  api_->create(resources::kExtendedResourceClaims, ns_,
               itest::claimObject(ns_, name, resource_, count, {{"type", "k80"}}));
}

json E2eTest::busyboxPod(const std::string& name, const std::vector<std::string>& claims,
                         const std::string& script, int gracePeriodSeconds,
                         const std::string& restartPolicy) const {
  json pod = itest::podObject(ns_, name, claims);
  pod["spec"]["terminationGracePeriodSeconds"] = gracePeriodSeconds;
  pod["spec"]["restartPolicy"] = restartPolicy;
  pod["spec"]["containers"] = json::array(
      {{{"name", "app"},
        {"image", kTestImage},
        // Nothing may be pulled: the image is loaded into the node's containerd.
        {"imagePullPolicy", "Never"},
        {"command", {"/bin/sh", "-c", script}},
        {"env",
         {{{"name", "ALLOCATION"},
           {"valueFrom",
            {{"fieldRef",
              {{"fieldPath", "metadata.annotations['extendedresource.io/allocation']"}}}}}}}},
        {"resources", {{"requests", {{"cpu", "10m"}, {"memory", "16Mi"}}}}}}});
  return pod;
}

std::string E2eTest::createPod(const json& pod) {
  return api_->create(resources::kPods, ns_, pod)["metadata"]["uid"].get<std::string>();
}

std::optional<json> E2eTest::getPod(const std::string& name) {
  try {
    return api_->get(resources::kPods, ns_, name);
  } catch (const ApiError& e) {
    if (e.isNotFound()) {
      return std::nullopt;
    }
    throw;
  }
}

std::string E2eTest::podPhase(const std::string& name) {
  auto pod = getPod(name);
  return pod ? pod->value("/status/phase"_json_pointer, std::string()) : "";
}

json E2eTest::getClaim(const std::string& name) {
  return api_->get(resources::kExtendedResourceClaims, ns_, name);
}

json E2eTest::getDevice(const std::string& name) {
  return api_->get(resources::kExtendedResources, "", name);
}

std::string E2eTest::logs(const std::string& name) {
  std::string out;
  if (env_->kubectl("logs -n " + ns_ + " " + name, &out) != 0) {
    return "";
  }
  return out;
}

std::vector<std::string> E2eTest::eventMessages(const std::string& pod, const std::string& reason) {
  std::vector<std::string> out;
  json list = api_->list(resources::kEvents, ns_,
                         ListOptions{.fieldSelector = "involvedObject.name=" + pod});
  for (const auto& e : list["items"]) {
    if (e.value("reason", "") == reason) {
      out.push_back(e.value("message", ""));
    }
  }
  return out;
}

std::string E2eTest::awaitEventMessage(const std::string& pod, const std::string& reason,
                                       const std::string& part, std::chrono::milliseconds bound) {
  std::string found;
  eventually(
      [&] {
        for (const auto& m : eventMessages(pod, reason)) {
          if (m.find(part) != std::string::npos) {
            found = m;
            return true;
          }
        }
        return false;
      },
      bound);
  return found;
}

json E2eTest::awaitDeviceEvent(const std::string& name, const std::string& reason,
                               std::chrono::milliseconds bound) {
  json found;
  eventually(
      [&] {
        const json list =
            kubectlJson("get events -n default --field-selector involvedObject.name=" + name +
                        ",reason=" + reason);
        if (list.is_discarded() || list.value("items", json::array()).empty()) {
          return false;
        }
        found = list["items"][0];
        return true;
      },
      bound);
  return found;
}

void E2eTest::deletePod(const std::string& name, std::optional<int64_t> gracePeriodSeconds) {
  try {
    api_->remove(resources::kPods, ns_, name,
                 DeleteOptions{.gracePeriodSeconds = gracePeriodSeconds});
  } catch (const ApiError& e) {
    if (!e.isNotFound()) {
      throw;
    }
  }
}

bool E2eTest::deletePodsAndAwaitGone(const std::vector<std::string>& names) {
  for (const auto& name : names) {
    deletePod(name);
  }
  return eventually(
      [&] {
        for (const auto& name : names) {
          try {
            api_->get(resources::kPods, ns_, name);
            return false;
          } catch (const ApiError& e) {
            if (!e.isNotFound()) {
              return false;
            }
          }
        }
        return true;
      },
      60s);
}

json E2eTest::kubectlJson(const std::string& args) {
  std::string out;
  if (env_->kubectl(args + " -o json", &out) != 0) {
    return json::parse("", nullptr, false);
  }
  return json::parse(out, nullptr, false);
}

std::string E2eTest::scrapeMetrics(const std::string& app, int port) {
  const std::string scraper = "metrics-scraper";
  if (!getPod(scraper)) {
    // deploy/network-policy.yaml admits scrapers by their pod's and their namespace's label.
    api_->patch(resources::kNamespaces, "", ns_, PatchType::kMerge,
                {{"metadata", {{"labels", {{"extendedresource.io/metrics-scraper", "true"}}}}}});
    json pod = busyboxPod(scraper, {}, "exec sleep 3600");
    pod["metadata"]["labels"] = {{"extendedresource.io/metrics-scraper", "true"}};
    pod["spec"]["nodeName"] = node_;
    pod["spec"].erase("schedulerName");
    createPod(pod);
  }
  if (!eventually([&] { return podRunning(scraper); }, 60s)) {
    std::cerr << "scrape: the scraper pod is " << podPhase(scraper) << ", not Running\n";
    return "";
  }
  // The scraper's node's pod: pods reach pods of their own node only (the further nodes'
  // networks are reached through kube-apiserver's address alone).
  std::string ip;
  for (const auto& p : componentPods(app, node_)) {
    if (p.value("/status/phase"_json_pointer, std::string()) == "Running") {
      ip = p.value("/status/podIP"_json_pointer, std::string());
      break;
    }
  }
  if (ip.empty()) {
    std::cerr << "scrape: no running pod of " << app << " with an IP on " << node_ << "\n";
    return "";
  }
  std::string out;
  const std::string url = "http://" + ip + ":" + std::to_string(port) + "/metrics";
  // (busybox's wget -T crashes in the test image; timeout bounds it instead.)
  if (env_->kubectl("exec -n " + ns_ + " " + scraper + " -- timeout 10 wget -q -O - " + url,
                    &out) != 0) {
    std::cerr << "scrape: GET " << url << " from " << scraper << " failed: " << out << "\n";
    return "";
  }
  return out;
}

std::vector<json> E2eTest::componentPods(const std::string& app, const std::string& node) {
  std::vector<json> out;
  json pods = kubectlJson("get pods -n kube-system -l app.kubernetes.io/name=" + app +
                          (node.empty() ? "" : " --field-selector spec.nodeName=" + node));
  if (pods.is_discarded()) {
    return out;
  }
  for (auto& p : pods["items"]) {
    if (!p.contains("/metadata/deletionTimestamp"_json_pointer)) {
      out.push_back(std::move(p));
    }
  }
  return out;
}

bool E2eTest::deploymentReady(const std::string& name, json* seen) {
  json d = kubectlJson("get deployment -n kube-system " + name);
  const bool ready = !d.is_discarded() && d.value("/status/readyReplicas"_json_pointer, 0) ==
                                              d.value("/spec/replicas"_json_pointer, -1);
  if (seen != nullptr) {
    *seen = std::move(d);
  }
  return ready;
}

std::vector<pid_t> processesOf(const std::string& id) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) {
      continue;
    }
    std::ifstream in(entry.path() / "cgroup");
    const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    if (text.find(id) != std::string::npos) {
      out.push_back(static_cast<pid_t>(std::stol(name)));
    }
  }
  return out;
}

std::string containerIdOf(const json& pod) {
  std::string id = pod.value("/status/containerStatuses/0/containerID"_json_pointer, std::string());
  const auto sep = id.find("://");
  return sep == std::string::npos ? id : id.substr(sep + 3);
}

std::string freezerOf(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    // "N:freezer:/kubepods/.../<container id>"
    const size_t first = line.find(':');
    const size_t second = line.find(':', first + 1);
    if (first != std::string::npos && second != std::string::npos &&
        line.substr(first + 1, second - first - 1) == "freezer") {
      return "/sys/fs/cgroup/freezer" + line.substr(second + 1);
    }
  }
  return "";
}

}  // namespace ker::e2e
