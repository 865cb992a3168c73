#include "scheduler/extender.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "model/objects.h"
#include "scheduler/extender_handlers.h"
#include "scheduler_fixtures.h"
#include "test/unit/fake_api_client.h"

namespace ker {
namespace {

using nlohmann::json;
using testing::claim;
using testing::device;

// The Extender's verbs over an in-memory cluster: nodes n1 (zone a) and n2 (zone b).
class ExtenderTest : public ::testing::Test {
 protected:
  ExtenderTest() {
    for (const auto& [name, zone] : {std::pair{"n1", "a"}, std::pair{"n2", "b"}}) {
      Node n;
      n.meta.name = name;
      n.meta.labels = {{"zone", zone}};
      nodes_[name] = std::make_shared<const Node>(n);
    }
    addClaim(claim("c", 1));
  }

  void addClaim(ExtendedResourceClaim c) {
    claims_[objectKey(c.meta.ns, c.meta.name)] = std::make_shared<const ExtendedResourceClaim>(c);
  }
  void addDevice(ExtendedResource d) {
    index_.upsert(std::make_shared<const ExtendedResource>(std::move(d)));
  }
  // A device pinned to `node` by name whose term also asks for a zone label.
  static ExtendedResource pinnedInZone(const std::string& name, const std::string& node,
                                       SelectorOperator op, const std::string& zone) {
    ExtendedResource d = device(name, node, {});
    d.nodeAffinity.terms[0].matchExpressions = {{"zone", op, {zone}}};
    return d;
  }
  static json podJson() {
    return {{"metadata",
             {{"name", "p"},
              {"namespace", "default"},
              {"uid", "pod-uid"},
              {"annotations", {{"extendedresource.io/claims", "c"}}}}}};
  }
  json nodeJson(const std::string& name) const {
    return {{"metadata", {{"name", name}, {"labels", nodes_.at(name)->meta.labels}}}};
  }
  // The passing nodes of a filter in each mode, checked to agree.
  std::vector<std::string> passing() {
    const std::string names =
        json{{"Pod", podJson()}, {"NodeNames", {"n1", "n2"}}, {"Nodes", nullptr}}.dump();
    const std::string list = json{
        {"Pod", podJson()},
        {"Nodes", {{"items", {nodeJson("n1"), nodeJson("n2")}}}},
        {"NodeNames", nullptr}}.dump();
    std::vector<std::string> out[2];
    int i = 0;
    for (const std::string* body : {&names, &list}) {
      const ExtenderArgs args = parseExtenderArgs(*body);
      const FilterReply reply = extender_.filter(args).reply;
      EXPECT_TRUE(reply.error.empty()) << reply.error;
      out[i++].assign(reply.passing.begin(), reply.passing.end());
    }
    EXPECT_EQ(out[0], out[1]) << "NodeNames and NodeList modes disagree";
    return out[0];
  }

  std::map<std::string, ClaimPtr> claims_;
  std::map<std::string, std::shared_ptr<const Node>> nodes_;
  DeviceIndex index_;
  testing::FakeApiClient api_;
  Binder binder_{api_, index_, [this](const std::string& n) { return nodes_.at(n)->meta.labels; }};
  Extender extender_{index_,
                     [this](const std::string& key) -> ClaimPtr {
                       auto it = claims_.find(key);
                       return it == claims_.end() ? nullptr : it->second;
                     },
                     [this](const std::string& n) -> std::shared_ptr<const Node> {
                       auto it = nodes_.find(n);
                       return it == nodes_.end() ? nullptr : it->second;
                     },
                     binder_, Scoring{}};
};

// Before the claim cache has listed, the devices claims hold are unknown: a device recreated
// under a held name would look free. Every verb is refused until then.
TEST_F(ExtenderTest, HandlersRefuseEveryVerbUntilTheCachesHaveSynced) {
  addDevice(device("d1", "n1", {}));
  bool synced = false;
  metrics::Registry registry;
  ExtenderHandlers handlers(extender_, registry, [&] { return synced; });
  const std::string filterBody = json{{"Pod", podJson()}, {"NodeNames", {"n1"}}}.dump();
  const std::string bindBody = json{
      {"PodName", "p"},
      {"PodNamespace", "default"},
      {"PodUID", "pod-uid"},
      {"Node", "n1"}}.dump();
  for (const auto& [verb, reply] : {std::pair{"filter", handlers.filter(filterBody)},
                                    std::pair{"prioritize", handlers.prioritize(filterBody)},
                                    std::pair{"bind", handlers.bind(bindBody)}}) {
    EXPECT_EQ(reply.status, 503) << verb;
    EXPECT_EQ(json::parse(reply.body.text)["Error"],
              std::string(verb) + ": the extender's caches have not synced yet");
  }
  EXPECT_TRUE(api_.bindings().empty());
  EXPECT_EQ(api_.calls(testing::FakeApiClient::Verb::kUpdateStatus), 0);
  synced = true;
  const HttpResponse reply = handlers.filter(filterBody);
  EXPECT_EQ(reply.status, 200);
  EXPECT_EQ(json::parse(reply.body.join(filterBody))["NodeNames"], json({"n1"}));
}

// A filter that passes no node says why in a counter a dashboard can draw: the words are in
// each failed node's message, which only the pod's events show.
TEST_F(ExtenderTest, FiltersThatPassNoNodeAreCountedByWhy) {
  metrics::Registry registry;
  ExtenderHandlers handlers(extender_, registry, [] { return true; });
  auto filter = [&](const std::string& uid, const std::string& claims) {
    json pod = podJson();
    pod["metadata"]["uid"] = uid;
    pod["metadata"]["annotations"]["extendedresource.io/claims"] = claims;
    return handlers.filter(json{{"Pod", pod}, {"NodeNames", {"n1", "n2"}}}.dump());
  };
  auto count = [&](const std::string& reason) {
    const std::string page = registry.render();
    const std::string series =
        "extended_resource_scheduler_filter_refusals_total{reason=\"" + reason + "\"} ";
    const auto at = page.find(series);
    return at == std::string::npos ? 0 : std::stoi(page.substr(at + series.size()));
  };
  EXPECT_EQ(filter("u1", "c").status, 200);  // no device anywhere
  EXPECT_EQ(count("no_free_device"), 1);
  EXPECT_EQ(filter("u1", "nope").status, 200);  // a claim that does not exist
  EXPECT_EQ(count("claims_unresolvable"), 1);

  addDevice(device("d1", "n1", {}));
  EXPECT_EQ(filter("u1", "c").status, 200);  // passes n1, and holds d1 for u1
  addClaim(claim("c2", 1));
  EXPECT_EQ(filter("u2", "c2").status, 200);  // d1 is held for u1
  EXPECT_EQ(count("no_free_device"), 2);
  EXPECT_EQ(count("awaiting_claims"), 0);

  // The rule itself, for the cases a cluster sets up with more effort.
  FilterReply none;
  none.failedUnresolvable.emplace_back("n1", "claim c is bound on n9");
  PodClaims pinned;
  pinned.fixedNode = "n9";
  EXPECT_EQ(filterRefusal(pinned, none), FilterRefusal::kPinnedElsewhere);
  PodClaims awaiting;
  awaiting.block = ClaimsBlock::kAwaitingClaim;
  EXPECT_EQ(filterRefusal(awaiting, none), FilterRefusal::kAwaitingClaims);
  FilterReply passed = none;
  passed.passing.push_back("n2");
  EXPECT_EQ(filterRefusal(pinned, passed), std::nullopt);
  EXPECT_EQ(filterRefusal(pinned, FilterReply{}), std::nullopt);
}

TEST_F(ExtenderTest, PinnedDevicesAreOfferedOnTheirNodeOnly) {
  addDevice(device("d", "n1", {}));
  EXPECT_EQ(passing(), std::vector<std::string>{"n1"});
}

TEST_F(ExtenderTest, APodSentWithoutUidOrNamespaceIsFilteredAndPrioritized) {
  addDevice(device("d", "n1", {}));
  json pod = podJson();
  pod["metadata"].erase("uid");
  pod["metadata"].erase("namespace");
  const std::string body = json{{"Pod", pod}, {"NodeNames", {"n1", "n2"}}}.dump();
  const ExtenderArgs args = parseExtenderArgs(body);  // args views body
  const FilterReply reply = extender_.filter(args).reply;
  EXPECT_EQ(reply.error, "");
  EXPECT_EQ(std::vector<std::string>(reply.passing.begin(), reply.passing.end()),
            std::vector<std::string>{"n1"});
  ASSERT_EQ(reply.failed.size(), 1u);
  EXPECT_EQ(reply.failed[0].first, "n2");
  EXPECT_EQ(extender_.prioritize(args).size(), 2u);
}

// Requirements of one term are ANDed: a device named to n1 whose term also wants zone a is
// there, one that wants zone b (or not zone a) is on no node at all.
TEST_F(ExtenderTest, APinnedDeviceWhoseTermAlsoTestsLabelsNeedsThoseLabels) {
  addDevice(pinnedInZone("d", "n1", SelectorOperator::kIn, "b"));
  EXPECT_EQ(passing(), std::vector<std::string>{});

  addDevice(pinnedInZone("d", "n1", SelectorOperator::kIn, "a"));
  EXPECT_EQ(passing(), std::vector<std::string>{"n1"});

  addDevice(pinnedInZone("d", "n1", SelectorOperator::kNotIn, "a"));
  EXPECT_EQ(passing(), std::vector<std::string>{});

  // The label test goes with the device: plain pinned devices are counted again.
  index_.remove("d");
  addDevice(device("d2", "n2", {}));
  EXPECT_EQ(passing(), std::vector<std::string>{"n2"});
}

// Available yet naming a claim (a hand-edited status): bind would refuse it, so filter does.
TEST_F(ExtenderTest, AnAvailableDeviceThatStillNamesAClaimIsNotOffered) {
  ExtendedResource d = device("d", "n1", {});
  d.claimRef = ClaimRef{"default", "other", "uid-other"};
  addDevice(d);
  EXPECT_EQ(passing(), std::vector<std::string>{});
  d.claimRef.reset();
  addDevice(d);
  EXPECT_EQ(passing(), std::vector<std::string>{"n1"});
}

TEST_F(ExtenderTest, FilterAndBindAgreeOnAPinnedDeviceThatTestsLabels) {
  addDevice(pinnedInZone("d", "n1", SelectorOperator::kNotIn, "a"));
  api_.seed(resources::kExtendedResources, index_.get("d")->toJson(SystemTime{}));
  api_.seed(resources::kExtendedResourceClaims, claims_.at("default/c")->toJson(SystemTime{}));
  json pod = podJson();
  pod["metadata"].erase("uid");
  const std::string uid = api_.seed(resources::kPods, pod)["metadata"]["uid"];

  EXPECT_EQ(passing(), std::vector<std::string>{});
  EXPECT_NE(extender_.bind({"p", "default", uid, "n1"}).message(), "");
  EXPECT_EQ(api_.bindings().size(), 0u);
}

}  // namespace
}  // namespace ker
