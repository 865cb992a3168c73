// libFuzzer target: one request body through each of the extender's verbs (filter,
// prioritize, bind, preempt), as anyone who can reach its port could POST it, over a small
// in-memory cluster so that bind runs its real logic against the fake API server. Beyond what the
// sanitizers catch, it aborts when a reply breaks what kube-scheduler relies on. The body's pod
// spec is also read as the node agent reads one, for its subPath host paths.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <string_view>

#include "agent/host_sub_paths.h"
#include "common/logging.h"
#include "common/metrics.h"
#include "common/resource.h"
#include "model/invariants.h"
#include "model/objects.h"
#include "model/resource_class.h"
#include "scheduler/bind/binder.h"
#include "scheduler/cache/device_index.h"
#include "scheduler/extender.h"
#include "scheduler/extender_handlers.h"
#include "scheduler/wire/extender_wire.h"
#include "test/unit/extender_cluster.h"
#include "test/unit/fake_api_client.h"

namespace ker {
namespace {

using nlohmann::json;

[[noreturn]] void violated(const char* verb, const std::string& what, const HttpResponse& reply) {
  std::fprintf(stderr, "%s: %s\nreply %d: %.2000s\n", verb, what.c_str(), reply.status,
               reply.body.text.c_str());
  std::abort();
}

// The cluster, with the extender's caches filled from the API as its informers would after a
// sync. Building it costs far more than a request, so it is kept until a bind writes to the
// API (see LLVMFuzzerTestOneInput): every input still starts from the same state.
struct World {
  World() {
    testing::seedExtenderCluster(api);
    // A class serving nvidia.com/gpu, so that pods asking in their resources reach the class
    // rules (the wait for the record, the recorded claim's check).
    auto gpu = std::make_shared<const ExtendedResourceClass>(ExtendedResourceClass::fromJson(
        {{"metadata", {{"name", "gpu"}}},
         {"spec",
          {{"extendedResourceName", "nvidia.com/gpu"}, {"rawResourceName", "nvidia.com/gpu"}}}}));
    extender.serveClasses([gpu] { return std::vector<ClassPtr>{gpu}; });
    for (const json& d : items(resources::kExtendedResources)) {
      index.upsert(std::make_shared<const ExtendedResource>(ExtendedResource::fromJson(d)));
    }
    for (const json& c : items(resources::kExtendedResourceClaims)) {
      auto claim =
          std::make_shared<const ExtendedResourceClaim>(ExtendedResourceClaim::fromJson(c));
      claims[objectKey(claim->meta.ns, claim->meta.name)] = claim;
    }
    for (const json& n : items(resources::kNodes)) {
      Node node = Node::fromJson(n);
      nodes[node.meta.name] = std::make_shared<const Node>(node);
    }
  }

  json items(const Resource& res) { return api.list(res, "", ListOptions{})["items"]; }

  ClusterSnapshot snapshot() {
    ClusterSnapshot s;
    for (const json& d : items(resources::kExtendedResources)) {
      s.devices.push_back(ExtendedResource::fromJson(d));
    }
    for (const json& c : items(resources::kExtendedResourceClaims)) {
      s.claims.push_back(ExtendedResourceClaim::fromJson(c));
    }
    for (const json& p : items(resources::kPods)) {
      s.pods.push_back(Pod::fromJson(p));
    }
    for (const json& n : items(resources::kNodes)) {
      s.nodes.push_back(Node::fromJson(n));
    }
    return s;
  }

  testing::FakeApiClient api;
  DeviceIndex index;
  std::map<std::string, ClaimPtr> claims;
  std::map<std::string, std::shared_ptr<const Node>> nodes;
  Binder binder{api, index, [this](const std::string& node) {
                  return Node::fromJson(api.get(resources::kNodes, "", node)).meta.labels;
                }};
  Extender extender{index,
                    [this](const std::string& key) -> ClaimPtr {
                      auto it = claims.find(key);
                      return it == claims.end() ? nullptr : it->second;
                    },
                    [this](const std::string& node) -> std::shared_ptr<const Node> {
                      auto it = nodes.find(node);
                      return it == nodes.end() ? nullptr : it->second;
                    },
                    binder, Scoring{ScoringStrategy::kBinpack, "numaNode"}};
  metrics::Registry registry;
  ExtenderHandlers handlers{extender, registry};
};

// Every reply is JSON kube-scheduler can decode: 200, or 400 with the reason in Error. A 500
// means an exception other than WireError escaped: hostile input must not cause those.
// The reply as it goes on the wire: its text with the request slices it names inserted.
json decode(const char* verb, const HttpResponse& reply, std::string_view request) {
  if (reply.status != 200 && reply.status != 400) {
    violated(verb, "status other than 200 or 400", reply);
  }
  if (!reply.body.fits(request.size())) {
    violated(verb, "reply slices lie outside the request", reply);
  }
  json body;
  try {
    body = json::parse(reply.body.join(request));
  } catch (const json::exception& e) {
    violated(verb, std::string("reply is not JSON: ") + e.what(), reply);
  }
  if (reply.status == 400 && (!body.is_object() || !body.contains("Error") ||
                              !body["Error"].is_string() || body["Error"].empty())) {
    violated(verb, "400 without an Error message", reply);
  }
  return body;
}

void checkFilter(const HttpResponse& reply, const ExtenderArgs& args) {
  const json body = decode("filter", reply, args.body);
  if (reply.status != 200) {
    return;
  }
  const std::set<std::string> asked(args.nodeNames.begin(), args.nodeNames.end());
  std::set<std::string> answered;
  for (const json& n : body.at("NodeNames")) {
    if (asked.count(n.get<std::string>()) == 0) {
      violated("filter", "passes a node it was not asked about", reply);
    }
    answered.insert(n.get<std::string>());
  }
  for (const char* failed : {"FailedNodes", "FailedAndUnresolvableNodes"}) {
    for (const auto& [node, why] : body.at(failed).items()) {
      if (asked.count(node) == 0 || why.get<std::string>().empty()) {
        violated("filter", std::string(failed) + " holds an unknown node or no reason", reply);
      }
      answered.insert(node);
    }
  }
  // kube-scheduler reads the failed nodes only when none passes (to explain the pod's
  // FitError): then every candidate must be failed; a reply that passes a node may leave
  // the others out.
  if (body.at("NodeNames").empty() && answered != asked) {
    violated("filter", "no node passes and some candidate is not failed", reply);
  }
  if (args.hasNodeList) {
    // The passing Nodes go back as the request sent them, in NodeNames' order.
    const json& items = body.at("Nodes").at("items");
    const json& names = body.at("NodeNames");
    if (items.size() != names.size()) {
      violated("filter", "Nodes.items does not match NodeNames", reply);
    }
    std::map<std::string, std::string_view> sent;
    for (size_t i = 0; i < args.nodeNames.size(); ++i) {
      sent.emplace(args.nodeNames[i], args.nodeObjects[i]);
    }
    for (size_t i = 0; i < items.size(); ++i) {
      const auto it = sent.find(names[i].get<std::string>());
      if (it == sent.end() || items[i] != json::parse(it->second)) {
        violated("filter", "a Node in Nodes.items is not the one the request sent", reply);
      }
    }
  }
}

void checkPrioritize(const HttpResponse& reply, const ExtenderArgs& args) {
  const json body = decode("prioritize", reply, args.body);
  if (reply.status != 200) {
    return;
  }
  if (body.size() != args.nodeNames.size()) {
    violated("prioritize", "not one score per candidate", reply);
  }
  for (size_t i = 0; i < args.nodeNames.size(); ++i) {
    const int score = body[i].at("Score").get<int>();
    if (body[i].at("Host") != args.nodeNames[i] || score < 0 || score > 10) {
      violated("prioritize", "host out of order or score outside 0..10", reply);
    }
  }
}

void checkBind(const HttpResponse& reply, World& world, std::string_view input, bool wrote) {
  const json body = decode("bind", reply, input);
  if (reply.status == 200 && body.at("Error").empty()) {
    // Success means the pod really is on the node the scheduler asked for.
    const BindingArgs args = parseBindingArgs(input);
    auto pod = world.api.peek(resources::kPods, args.podNamespace, args.podName);
    if (!pod || Pod::fromJson(*pod).nodeName != args.node) {
      violated("bind", "reported success but the pod is not bound to " + args.node, reply);
    }
  }
  // Whatever the request, the cluster stays consistent: a failed bind undoes its writes.
  if (wrote) {
    for (const std::string& v : checkInvariants(world.snapshot())) {
      violated("bind", "cluster invariant broken: " + v, reply);
    }
  }
}

// The kept candidates are among those asked, each with victims (kube-scheduler refuses a
// node without), and a well-formed request is answered.
void checkPreempt(const HttpResponse& reply, const std::optional<PreemptionArgs>& args,
                  std::string_view input) {
  const json body = decode("preempt", reply, input);
  if (args.has_value() != (reply.status == 200)) {
    violated("preempt", "answer disagrees with parsePreemptionArgs", reply);
  }
  if (!args) {
    return;
  }
  std::map<std::string, size_t> asked;
  for (const auto& n : args->nodes) {
    asked[n.node] = n.pods.size();
  }
  for (const auto& [node, victims] : body.at("NodeNameToMetaVictims").items()) {
    auto it = asked.find(node);
    if (it == asked.end() || victims.at("Pods").size() < it->second) {
      violated("preempt", "a node it was not asked about, or fewer victims than asked", reply);
    }
  }
}

// The node agent reads the same pod's spec for the host paths its subPath mounts reach
// (NodePod), leniently: whatever the shape, it never throws.
void readAsTheNodeAgentWould(std::string_view input) {
  const json body = json::parse(input, nullptr, false);
  if (!body.is_object()) {
    return;
  }
  for (const char* key : {"Pod", "pod"}) {
    const auto pod = body.find(key);
    if (pod == body.end() || !pod->is_object()) {
      continue;
    }
    if (const auto spec = pod->find("spec"); spec != pod->end() && spec->is_object()) {
      (void)agent::readHostSubPaths(*spec);
    }
  }
}

}  // namespace
}  // namespace ker

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Failed binds log; that is expected here, so the lines go to a stream that drops them.
  static std::ostream discard(nullptr);
  ker::log::init(ker::log::Format::kText, 0, &discard);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static std::unique_ptr<ker::World> world;
  if (!world) {
    world = std::make_unique<ker::World>();
  }
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::string before = world->api.resourceVersion();

  // Filter and prioritize parse the same ExtenderArgs; the checks need the parsed candidates.
  std::optional<ker::ExtenderArgs> args;
  try {
    args = ker::parseExtenderArgs(input);
  } catch (const ker::WireError&) {
  }
  ker::readAsTheNodeAgentWould(input);
  const ker::HttpResponse filtered = world->handlers.filter(input);
  if (args.has_value() != (filtered.status == 200)) {
    ker::violated("filter", "answer disagrees with parseExtenderArgs", filtered);
  }
  if (args) {
    ker::checkFilter(filtered, *args);
    ker::checkPrioritize(world->handlers.prioritize(input), *args);
  } else {
    ker::decode("prioritize", world->handlers.prioritize(input), input);
  }

  std::optional<ker::PreemptionArgs> preemption;
  try {
    preemption = ker::parsePreemptionArgs(input);
  } catch (const ker::WireError&) {
  }
  ker::checkPreempt(world->handlers.preempt(input), preemption, input);

  const ker::HttpResponse bound = world->handlers.bind(input);
  const bool wrote = world->api.resourceVersion() != before;
  ker::checkBind(bound, *world, input, wrote);
  // A preemption's nomination would change later inputs' answers too.
  if (wrote || world->index.nominatedPods() != 0) {
    world.reset();
  }
  return 0;
}
