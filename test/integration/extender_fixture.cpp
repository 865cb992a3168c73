#include "extender_fixture.h"

#include <httplib.h>

#include "common/api_error.h"
#include "model/objects.h"

namespace ker::itest {

std::string ExtenderSuite::setupError_;
TestEnv* ExtenderSuite::env_ = nullptr;
KubeClient* ExtenderSuite::api_ = nullptr;
std::unique_ptr<ChildProcess> ExtenderSuite::extender_;
int ExtenderSuite::extenderPort_ = 0;
int ExtenderSuite::healthPort_ = 0;
std::string ExtenderSuite::extenderUrl_;
std::string ExtenderSuite::schedulerName_;

void ExtenderSuite::setUpSuite(const std::function<void()>& setUp) {
  setupError_.clear();
  try {
    setUp();
  } catch (const std::exception& e) {
    setupError_ = e.what();
  }
}

void ExtenderSuite::startStack(const Options& opts) {
  env_ = TestEnv::get();
  if (env_ == nullptr || extender_) {
    return;
  }
  env_->ensureCrds();
  api_ = &env_->admin();
  extenderPort_ = freePort();
  healthPort_ = freePort();
  // The extender runs with the ServiceAccount and RBAC that deploy/extender.yaml defines, so
  // every test also shows those rights are enough.
  std::vector<std::string> args = {
      "--kubeconfig=" + env_->serviceAccountKubeconfig("extended-resource-scheduler-extender"),
      "--bind-address=127.0.0.1", "--port=" + std::to_string(extenderPort_),
      "--health-port=" + std::to_string(healthPort_),
      // Tests set up states as admin that the allocation policy would refuse: it is not
      // installed here (AdmissionPolicyCheckTest covers the check).
      "--admission-policy=", "--v=2"};
  std::string schedulerArgs =
      opts.nodeCacheCapable ? " --node-cache-capable true" : " --node-cache-capable false";
  extenderUrl_ =
      (opts.https ? "https://127.0.0.1:" : "http://127.0.0.1:") + std::to_string(extenderPort_);
  if (opts.https) {
    args.push_back("--tls-cert-file=" + env_->value("SERVING_CERT"));
    args.push_back("--tls-private-key-file=" + env_->value("SERVING_KEY"));
    schedulerArgs += " --extender-ca " + env_->value("CA_CERT");
    if (opts.mutualTls) {
      args.push_back("--client-ca-file=" + env_->value("CA_CERT"));
      schedulerArgs += " --extender-client-cert " + env_->value("ADMIN_CERT") +
                       " --extender-client-key " + env_->value("ADMIN_KEY");
    }
  }
  schedulerName_ = uniqueName("sched");
  args.push_back("--scheduler-name=" + schedulerName_);
  args.insert(args.end(), opts.extenderArgs.begin(), opts.extenderArgs.end());
  if (!opts.schedulerArgs.empty()) {
    schedulerArgs += " " + opts.schedulerArgs;
  }
  extender_ =
      std::make_unique<ChildProcess>(env_->binary("scheduler/extended-resource-scheduler"), args,
                                     env_->dir() + "/extender-" + schedulerName_ + ".log");
  extender_->start(opts.extenderEnv);
  httplib::Client health("127.0.0.1", healthPort_);
  bool ready = eventually(
      [&] {
        auto res = health.Get("/readyz");
        return res && res->status == 200;
      },
      60s, 100ms);
  if (!ready) {
    std::string tail = extender_->logTail();
    extender_.reset();
    throw std::runtime_error("extender never became ready:\n" + tail);
  }
  if (env_->launch("start-scheduler", "--name " + schedulerName_ + " --scheduler-name " +
                                          schedulerName_ + " --extender-url " + extenderUrl_ +
                                          schedulerArgs) != 0) {
    extender_.reset();
    throw std::runtime_error("kube-scheduler did not start");
  }
}

void ExtenderSuite::stopStack() {
  if (env_ != nullptr && !schedulerName_.empty()) {
    env_->launch("stop-scheduler", "--name " + schedulerName_);
    schedulerName_.clear();
  }
  extender_.reset();
}

::testing::AssertionResult ExtenderSuite::alive(const std::unique_ptr<ChildProcess>& child,
                                                const std::string& what) {
  if (child && child->running()) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << what << " died:\n" << (child ? child->logTail() : "");
}

void ExtenderSuite::SetUp() {
  if (TestEnv::get() == nullptr) {
    GTEST_SKIP() << "KER_TEST_ENV is not set: run `make integration-test`";
  }
  ASSERT_EQ(setupError_, "") << "the suite's set-up failed";
  ASSERT_TRUE(extender_) << "the extender stack is not running";
  ASSERT_TRUE(extender_->running()) << "extender died:\n" << extender_->logTail();
  resource_ = uniqueName("gpu") + ".example.com/gpu";
  ns_ = createNamespace(*api_, "ext");
}

std::vector<std::string> ExtenderSuite::makeNodes(int count) {
  std::vector<std::string> names;
  for (int i = 0; i < count; ++i) {
    names.push_back(uniqueName("node"));
    api_->create(resources::kNodes, "", nodeObject(names.back()));
  }
  return names;
}

std::string ExtenderSuite::makeDevice(const std::string& node, const std::string& type) {
  const std::string name = uniqueName("dev");
  api_->create(resources::kExtendedResources, "",
               deviceObject(name, node, resource_, {{"type", type}}));
  return name;
}

nlohmann::json ExtenderSuite::getPod(const std::string& name) {
  return api_->get(resources::kPods, ns_, name);
}

std::string ExtenderSuite::nodeOf(const std::string& pod) {
  return getPod(pod)["spec"].value("nodeName", "");
}

void ExtenderSuite::removeIgnoringMissing(const Resource& res, const std::string& ns,
                                          const std::string& name) {
  try {
    api_->remove(res, ns, name);
  } catch (const ApiError& e) {
    if (!e.isNotFound()) {
      throw;
    }
  }
}

void ExtenderSuite::removeClaimsAndDevices() {
  const nlohmann::json claims = api_->list(resources::kExtendedResourceClaims, ns_, {});
  for (const auto& c : claims["items"]) {
    removeIgnoringMissing(resources::kExtendedResourceClaims, ns_, c["metadata"]["name"]);
  }
  // The test's devices: those of its resource, and any its claims held (a second resource's).
  // Left behind, they stay bound to deleted claims once this suite's controller stops, and a
  // later suite's invariant check reports them.
  const nlohmann::json devices = api_->list(resources::kExtendedResources, "", {});
  for (const auto& d : devices["items"]) {
    if (d.value("/spec/rawResourceName"_json_pointer, "") == resource_ ||
        d.value("/status/claimRef/namespace"_json_pointer, "") == ns_) {
      removeIgnoringMissing(resources::kExtendedResources, "", d["metadata"]["name"]);
    }
  }
}

bool ExtenderSuite::waitBound(const std::string& pod, std::chrono::milliseconds timeout) {
  return eventually([&] { return !nodeOf(pod).empty(); }, timeout, 100ms);
}

void ExtenderSuite::createClaims(int count) {
  for (int i = 0; i < count; ++i) {
    api_->create(resources::kExtendedResourceClaims, ns_,
                 claimObject(ns_, "claim-" + std::to_string(i), resource_, 1, {{"type", "k80"}}));
  }
}

void ExtenderSuite::createClaimedPods(const std::string& prefix, int count) {
  for (int i = 0; i < count; ++i) {
    api_->create(resources::kPods, ns_,
                 podObject(ns_, prefix + "-" + std::to_string(i), {"claim-" + std::to_string(i)},
                           schedulerName_));
  }
}

int ExtenderSuite::boundPodCount() {
  int n = 0;
  for (const auto& p : api_->listAll(resources::kPods, ns_, {}).items) {
    n += p["spec"].value("nodeName", "").empty() ? 0 : 1;
  }
  return n;
}

void ExtenderSuite::deleteUnboundPods(const std::string& prefix, int count) {
  for (int i = 0; i < count; ++i) {
    const std::string pod = prefix + "-" + std::to_string(i);
    if (nodeOf(pod).empty()) {
      deletePodNow(*api_, ns_, pod);
    }
  }
}

std::string ExtenderSuite::failedScheduling(const std::string& pod) {
  std::string message;
  const nlohmann::json events = api_->list(
      resources::kEvents, ns_, ListOptions{.fieldSelector = "involvedObject.name=" + pod});
  for (const auto& e : events["items"]) {
    if (e.value("reason", "") == "FailedScheduling") {
      message = e.value("message", "");
    }
  }
  return message;
}

std::string ExtenderSuite::awaitFailedScheduling(const std::string& pod) {
  std::string message;
  eventually([&] { return !(message = failedScheduling(pod)).empty(); }, 30s, 200ms);
  return message;
}

std::string ExtenderSuite::invariantViolations() {
  return env_->invariantViolations();
}

std::string ExtenderSuite::extenderMetrics() {
  httplib::Client health("127.0.0.1", healthPort_);
  auto res = health.Get("/metrics");
  return res ? res->body : std::string();
}

void ExtenderSuite::expectPlacementOnMatchingNode() {
  auto nodes = makeNodes(3);
  api_->create(resources::kExtendedResources, "",
               deviceObject(uniqueName("p100"), nodes[0], resource_, {{"type", "p100"}}));
  const std::string k80 = uniqueName("k80");
  api_->create(resources::kExtendedResources, "",
               deviceObject(k80, nodes[1], resource_, {{"type", "k80"}}));
  api_->create(resources::kExtendedResourceClaims, ns_,
               claimObject(ns_, "k80-erc", resource_, 1, {{"type", "k80"}}));
  nlohmann::json pod =
      api_->create(resources::kPods, ns_, podObject(ns_, "web", {"k80-erc"}, schedulerName_));

  ASSERT_TRUE(waitBound("web")) << extender_->logTail();
  EXPECT_EQ(nodeOf("web"), nodes[1]);

  auto claim = ExtendedResourceClaim::fromJson(
      api_->get(resources::kExtendedResourceClaims, ns_, "k80-erc"));
  EXPECT_EQ(claim.phase, ClaimPhase::kBound);
  EXPECT_EQ(claim.allocated, (std::vector<std::string>{k80}));
  EXPECT_EQ(claim.nodeName, nodes[1]);
  ASSERT_TRUE(claim.podRef);
  EXPECT_EQ(claim.podRef->uid, pod["metadata"]["uid"]);

  auto device = ExtendedResource::fromJson(api_->get(resources::kExtendedResources, "", k80));
  EXPECT_EQ(device.phase, DevicePhase::kBound);
  ASSERT_TRUE(device.claimRef);
  EXPECT_EQ(device.claimRef->name, "k80-erc");
  EXPECT_EQ(device.claimRef->uid, claim.meta.uid);

  auto annotation = nlohmann::json::parse(
      getPod("web")["metadata"]["annotations"]["extendedresource.io/allocation"]
          .get<std::string>());
  EXPECT_EQ(annotation["k80-erc"][0]["name"], k80);
  EXPECT_EQ(annotation["k80-erc"][0]["deviceID"], k80 + "-id");
  EXPECT_EQ(annotation["k80-erc"][0]["rawResourceName"], resource_);

  EXPECT_EQ(invariantViolations(), "");
}

std::unique_ptr<ChildProcess> ExtenderSuite::startController(
    int port, const std::vector<std::string>& extraArgs) {
  std::vector<std::string> args = {
      "--kubeconfig=" + env_->serviceAccountKubeconfig("extended-resource-controller"),
      "--metrics-bind-address=127.0.0.1:" + std::to_string(port),
      "--scheduler-name=" + schedulerName_,
      "--orphan-grace-period=3s",
      "--leader-elect-retry-period=200ms",
      "--leader-elect-renew-deadline=2s",
      "--leader-elect-lease-duration=4s",
      "--admission-policy=",
      "--v=2"};
  args.insert(args.end(), extraArgs.begin(), extraArgs.end());
  auto child =
      std::make_unique<ChildProcess>(env_->binary("controller/extended-resource-controller"), args,
                                     env_->dir() + "/controller-" + std::to_string(port) + ".log");
  child->start();
  httplib::Client health("127.0.0.1", port);
  if (!eventually(
          [&] {
            auto res = health.Get("/readyz");
            return res && res->status == 200;
          },
          60s, 100ms)) {
    throw std::runtime_error("controller never became ready:\n" + child->logTail());
  }
  return child;
}

std::unique_ptr<ChildProcess> ExtenderSuite::startControllerManager(
    const std::string& controllers) {
  const int port = freePort();
  auto kcm = std::make_unique<ChildProcess>(
      env_->value("BIN_DIR") + "/kube-controller-manager",
      std::vector<std::string>{
          "--kubeconfig=" + env_->kubeconfig(), "--leader-elect=false",
          "--controllers=" + controllers, "--bind-address=127.0.0.1",
          "--secure-port=" + std::to_string(port),
          "--tls-cert-file=" + env_->dir() + "/pki/serving.crt",
          "--tls-private-key-file=" + env_->dir() + "/pki/serving.key",
          "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics", "--v=1"},
      env_->dir() + "/kcm-" + std::to_string(port) + ".log");
  kcm->start();
  return kcm;
}

double ExtenderSuite::metricValue(const std::string& text, const std::string& name) {
  size_t pos = 0;
  while ((pos = text.find(name + " ", pos)) != std::string::npos) {
    if (pos == 0 || text[pos - 1] == '\n') {
      return std::stod(text.substr(pos + name.size() + 1));
    }
    pos += name.size();
  }
  return -1;
}

}  // namespace ker::itest
