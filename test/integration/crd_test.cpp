// The CRDs and manifests against a real kube-apiserver: schema validation, defaults, the
// status subresource, and server-side dry-run of everything a user applies.
#include <gtest/gtest.h>

#include <functional>

#include "common/api_error.h"
#include "model/objects.h"
#include "template_helpers.h"
#include "test_env.h"

namespace ker::itest {
namespace {

using nlohmann::json;

class CrdTest : public ApiTest {
 protected:
  // Expects a create to be rejected by schema validation with a message naming `field`.
  void expectInvalid(const Resource& res, const std::string& ns, const json& obj,
                     const std::string& field) {
    try {
      api_->create(res, ns, obj);
      ADD_FAILURE() << "accepted: " << obj.dump();
    } catch (const ApiError& e) {
      EXPECT_EQ(e.kind(), ApiErrorKind::kInvalid) << e.what();
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  }
};

TEST_F(CrdTest, BothCrdsAreEstablishedWithShortNamesAndCategory) {
  std::string out;
  ASSERT_EQ(env_->kubectl("get extendedresource -o name", &out), 0) << out;
  ASSERT_EQ(env_->kubectl("api-resources --api-group=extendedresource.io -o wide", &out), 0);
  EXPECT_NE(out.find("er "), std::string::npos) << out;
  EXPECT_NE(out.find("erc "), std::string::npos) << out;
  EXPECT_NE(out.find("erct "), std::string::npos) << out;
  EXPECT_NE(out.find("extendedresource"), std::string::npos) << out;
}

TEST_F(CrdTest, SchemaRejectsInvalidObjects) {
  json noResource = deviceObject(uniqueName("bad"), "n1", "x.io/gpu", {});
  noResource["spec"].erase("rawResourceName");
  expectInvalid(resources::kExtendedResources, "", noResource, "rawResourceName");

  json noAffinity = deviceObject(uniqueName("bad"), "n1", "x.io/gpu", {});
  noAffinity["spec"].erase("nodeAffinity");
  expectInvalid(resources::kExtendedResources, "", noAffinity, "nodeAffinity");

  json badOperator = deviceObject(uniqueName("bad"), "n1", "x.io/gpu", {});
  badOperator["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchFields"][0]
             ["operator"] = "Near";
  expectInvalid(resources::kExtendedResources, "", badOperator, "operator");

  // Node field selectors take In or NotIn with exactly one name, as in core/v1.
  json twoNames = deviceObject(uniqueName("bad"), "n1", "x.io/gpu", {});
  twoNames["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchFields"][0]["values"] =
      {"n1", "n2"};
  expectInvalid(resources::kExtendedResources, "", twoNames, "values");
  json fieldExists = deviceObject(uniqueName("bad"), "n1", "x.io/gpu", {});
  fieldExists["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchFields"][0]
             ["operator"] = "Exists";
  expectInvalid(resources::kExtendedResources, "", fieldExists, "operator");

  expectInvalid(resources::kExtendedResourceClaims, "default",
                claimObject("default", uniqueName("bad"), "x.io/gpu", 0), "extendedResourceNum");

  json claimNoResource = claimObject("default", uniqueName("bad"), "x.io/gpu", 1);
  claimNoResource["spec"].erase("rawResourceName");
  expectInvalid(resources::kExtendedResourceClaims, "default", claimNoResource, "rawResourceName");
}

TEST_F(CrdTest, ClaimCountDefaultsToOne) {
  json c = claimObject("default", uniqueName("defaulted"), "x.io/gpu", 1);
  c["spec"].erase("extendedResourceNum");
  json created = api_->create(resources::kExtendedResourceClaims, "default", c);
  EXPECT_EQ(created["spec"]["extendedResourceNum"], 1);
}

TEST_F(CrdTest, StatusIsOnlyWritableThroughTheSubresource) {
  std::string name = uniqueName("status");
  json created = api_->create(resources::kExtendedResources, "",
                              deviceObject(name, "n1", "x.io/gpu", {{"type", "k80"}}));
  // A main-resource update that carries a status does not change it.
  json withStatus = created;
  withStatus["status"] = {{"phase", "Bound"}};
  json afterUpdate = api_->update(resources::kExtendedResources, "", withStatus);
  EXPECT_FALSE(afterUpdate.contains("status") && afterUpdate["status"].contains("phase"))
      << afterUpdate.dump();

  json viaSubresource = afterUpdate;
  viaSubresource["status"] = {{"phase", "Available"}};
  json afterStatus = api_->updateStatus(resources::kExtendedResources, "", viaSubresource);
  EXPECT_EQ(afterStatus["status"]["phase"], "Available");

  // The status schema is enforced too.
  afterStatus["status"]["phase"] = "Borrowed";
  try {
    api_->updateStatus(resources::kExtendedResources, "", afterStatus);
    ADD_FAILURE() << "bad phase accepted";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.kind(), ApiErrorKind::kInvalid) << e.what();
  }
}

// A claim is shareable or not for its whole life, defaults to not, and lists at most 32
// holders.
TEST_F(CrdTest, ShareableIsFixedAtCreationAndHoldersAreCapped) {
  json plain = api_->create(resources::kExtendedResourceClaims, "default",
                            claimObject("default", uniqueName("plain"), "x.io/gpu", 1));
  EXPECT_EQ(plain["spec"]["shareable"], false);
  plain["spec"]["shareable"] = true;
  try {
    api_->update(resources::kExtendedResourceClaims, "default", plain);
    ADD_FAILURE() << "shareable changed";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.kind(), ApiErrorKind::kInvalid) << e.what();
    EXPECT_NE(std::string(e.what()).find("shareable cannot be changed"), std::string::npos)
        << e.what();
  }

  json shared = claimObject("default", uniqueName("shared"), "x.io/gpu", 1);
  shared["spec"]["shareable"] = true;
  shared = api_->create(resources::kExtendedResourceClaims, "default", shared);
  json holders = json::array();
  for (int i = 0; i < 33; ++i) {
    holders.push_back({{"name", "p" + std::to_string(i)}, {"uid", "u" + std::to_string(i)}});
  }
  shared["status"] = {{"phase", "Bound"}, {"nodeName", "n1"}, {"holders", holders}};
  try {
    api_->updateStatus(resources::kExtendedResourceClaims, "default", shared);
    ADD_FAILURE() << "33 holders accepted";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.kind(), ApiErrorKind::kInvalid) << e.what();
    EXPECT_NE(std::string(e.what()).find("holders"), std::string::npos) << e.what();
  }
  holders.erase(holders.size() - 1);
  shared["status"]["holders"] = holders;
  EXPECT_EQ(
      api_->updateStatus(resources::kExtendedResourceClaims, "default", shared)["status"]["holders"]
          .size(),
      32u);
  // kubectl get -o wide names them.
  std::string out;
  ASSERT_EQ(
      env_->kubectl("get erc -n default -o wide " + shared["metadata"]["name"].get<std::string>(),
                    &out),
      0)
      << out;
  EXPECT_NE(out.find("HOLDERS"), std::string::npos) << out;
  EXPECT_NE(out.find(R"("name":"p0")"), std::string::npos) << out;
  EXPECT_NE(out.find(R"("name":"p31")"), std::string::npos) << "every holder: " << out;
  ASSERT_EQ(
      env_->kubectl("get erc -n default " + shared["metadata"]["name"].get<std::string>(), &out), 0)
      << out;
  EXPECT_EQ(out.find("HOLDERS"), std::string::npos) << "a wide column only: " << out;
  // Other suites check the whole cluster's invariants: no holders of pods that never existed.
  api_->remove(resources::kExtendedResourceClaims, "default", shared["metadata"]["name"]);
  api_->remove(resources::kExtendedResourceClaims, "default", plain["metadata"]["name"]);
}

// A claim made from a class lists the containers that asked (the agent gives each its share):
// the list can be neither changed nor removed, which would give every container every device,
// nor added to a claim made without one.
TEST_F(CrdTest, AClaimsContainersCanNeitherBeChangedNorRemovedNorAdded) {
  json split = claimObject("default", uniqueName("split"), "x.io/gpu", 2);
  split["spec"]["containers"] =
      json::array({{{"name", "app"}, {"count", 1}}, {{"name", "app2"}, {"count", 1}}});
  split = api_->create(resources::kExtendedResourceClaims, "default", split);
  json plain = api_->create(resources::kExtendedResourceClaims, "default",
                            claimObject("default", uniqueName("plain"), "x.io/gpu", 1));
  auto refused = [&](const json& patch, const std::string& name, const std::string& why) {
    try {
      api_->patch(resources::kExtendedResourceClaims, "default", name, PatchType::kJson, patch);
      ADD_FAILURE() << why << " accepted";
    } catch (const ApiError& e) {
      EXPECT_EQ(e.kind(), ApiErrorKind::kInvalid) << why << ": " << e.what();
      EXPECT_NE(std::string(e.what()).find("containers cannot be"), std::string::npos)
          << why << ": " << e.what();
    }
  };
  const std::string splitName = split["metadata"]["name"];
  const std::string plainName = plain["metadata"]["name"];
  refused(json::array({{{"op", "remove"}, {"path", "/spec/containers"}}}), splitName, "removal");
  refused(json::array({{{"op", "replace"}, {"path", "/spec/containers/0/name"}, {"value", "x"}}}),
          splitName, "a change");
  refused(json::array({{{"op", "add"},
                        {"path", "/spec/containers"},
                        {"value", json::array({{{"name", "app"}, {"count", 1}}})}}}),
          plainName, "an addition");
  // Other edits of the spec stay allowed (they take effect while the claim is Pending).
  EXPECT_NO_THROW(api_->patch(resources::kExtendedResourceClaims, "default", splitName,
                              PatchType::kJson,
                              json::array({{{"op", "add"},
                                            {"path", "/spec/metadataRequirements"},
                                            {"value", {{"matchLabels", {{"model", "k80"}}}}}}})));
  api_->remove(resources::kExtendedResourceClaims, "default", splitName);
  api_->remove(resources::kExtendedResourceClaims, "default", plainName);
}

// A claim made from a template belongs to one pod: a template asking for shareable claims is
// refused with a message that says what to do instead.
TEST_F(CrdTest, ATemplateCannotMakeShareableClaims) {
  json tmpl = templateObject("default", uniqueName("shared-tmpl"), "x.io/gpu");
  tmpl["spec"]["spec"]["shareable"] = true;
  expectInvalid(resources::kExtendedResourceClaimTemplates, "default", tmpl,
                "a claim made from a template belongs to one pod and cannot be shareable");

  tmpl["spec"]["spec"]["shareable"] = false;
  const json created = api_->create(resources::kExtendedResourceClaimTemplates, "default", tmpl);
  EXPECT_EQ(created["spec"]["spec"]["shareable"], false);
  json edited = created;
  edited["spec"]["spec"]["shareable"] = true;
  try {
    api_->update(resources::kExtendedResourceClaimTemplates, "default", edited);
    ADD_FAILURE() << "made shareable by an update";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.kind(), ApiErrorKind::kInvalid) << e.what();
  }
  api_->remove(resources::kExtendedResourceClaimTemplates, "default", created["metadata"]["name"]);
}

// A claim's selector may compare a property as a quantity; the CRD's rule wants exactly one
// value that is a quantity, and kubectl explain documents the operators.
TEST_F(CrdTest, ClaimsCompareQuantitiesWithOneValidValue) {
  auto withComparison = [&](const std::string& op, const json& values) {
    json c = claimObject("default", uniqueName("mem"), "x.io/gpu", 1);
    c["spec"]["metadataRequirements"] = {
        {"matchExpressions", {{{"key", "memory"}, {"operator", op}, {"values", values}}}}};
    return c;
  };
  for (const char* op : {"Gt", "Ge", "Lt", "Le"}) {
    json created =
        api_->create(resources::kExtendedResourceClaims, "default", withComparison(op, {"40Gi"}));
    EXPECT_EQ(created["spec"]["metadataRequirements"]["matchExpressions"][0]["operator"], op);
    api_->remove(resources::kExtendedResourceClaims, "default",
                 created["metadata"]["name"].get<std::string>());
  }
  expectInvalid(resources::kExtendedResourceClaims, "default", withComparison("Ge", {"40GB"}),
                "quantity");
  expectInvalid(resources::kExtendedResourceClaims, "default", withComparison("Lt", {"1Gi", "2Gi"}),
                "exactly one value");
  expectInvalid(resources::kExtendedResourceClaims, "default", withComparison("Gt", json::array()),
                "exactly one value");
  expectInvalid(resources::kExtendedResourceClaims, "default", withComparison("Above", {"1"}),
                "operator");

  json tmpl = {{"apiVersion", "extendedresource.io/v1alpha1"},
               {"kind", "ExtendedResourceClaimTemplate"},
               {"metadata", {{"name", uniqueName("mem")}, {"namespace", "default"}}},
               {"spec", {{"spec", withComparison("Ge", {"40GB"})["spec"]}}}};
  expectInvalid(resources::kExtendedResourceClaimTemplates, "default", tmpl, "quantity");

  std::string out;
  ASSERT_EQ(env_->kubectl("explain erc.spec.metadataRequirements.matchExpressions.operator", &out),
            0)
      << out;
  EXPECT_NE(out.find("quantity"), std::string::npos) << out;
  ASSERT_EQ(
      env_->kubectl("explain erct.spec.spec.metadataRequirements.matchExpressions.values", &out), 0)
      << out;
  EXPECT_NE(out.find("quantity"), std::string::npos) << out;
}

// A claim's constraints name a property; one without is refused, and kubectl explain
// documents them.
TEST_F(CrdTest, ClaimConstraintsNameAProperty) {
  json c = claimObject("default", uniqueName("numa"), "x.io/gpu", 4);
  c["spec"]["constraints"] = {{{"matchProperty", "numaNode"}}};
  json created = api_->create(resources::kExtendedResourceClaims, "default", c);
  EXPECT_EQ(created["spec"]["constraints"][0]["matchProperty"], "numaNode");
  api_->remove(resources::kExtendedResourceClaims, "default",
               created["metadata"]["name"].get<std::string>());
  json empty = claimObject("default", uniqueName("numa"), "x.io/gpu", 4);
  empty["spec"]["constraints"] = {json::object()};
  expectInvalid(resources::kExtendedResourceClaims, "default", empty, "matchProperty");
  json both = claimObject("default", uniqueName("numa"), "x.io/gpu", 4);
  both["spec"]["constraints"] = {{{"matchProperty", "numaNode"}, {"distinctProperty", "pciRoot"}}};
  expectInvalid(resources::kExtendedResourceClaims, "default", both,
                "exactly one of matchProperty and distinctProperty");
  json twoDistinct = claimObject("default", uniqueName("numa"), "x.io/gpu", 4);
  twoDistinct["spec"]["constraints"] = {{{"distinctProperty", "numaNode"}},
                                        {{"distinctProperty", "pciRoot"}}};
  expectInvalid(resources::kExtendedResourceClaims, "default", twoDistinct,
                "at most one constraint may name a distinctProperty");
  json distinct = claimObject("default", uniqueName("roots"), "x.io/gpu", 2);
  distinct["spec"]["constraints"] = {{{"matchProperty", "numaNode"}},
                                     {{"distinctProperty", "pciRoot"}}};
  created = api_->create(resources::kExtendedResourceClaims, "default", distinct);
  EXPECT_EQ(created["spec"]["constraints"][1]["distinctProperty"], "pciRoot");
  api_->remove(resources::kExtendedResourceClaims, "default",
               created["metadata"]["name"].get<std::string>());
  std::string out;
  ASSERT_EQ(env_->kubectl("explain erc.spec.constraints.matchProperty", &out), 0) << out;
  EXPECT_NE(out.find("same"), std::string::npos) << out;
  ASSERT_EQ(env_->kubectl("explain erc.spec.constraints.distinctProperty", &out), 0) << out;
  EXPECT_NE(out.find("no other device"), std::string::npos) << out;
  ASSERT_EQ(env_->kubectl("explain erct.spec.spec.constraints.distinctProperty", &out), 0) << out;
  EXPECT_NE(out.find("no other device"), std::string::npos) << out;
}

TEST_F(CrdTest, ClaimAlternativesAreNamedAndReplaceTheClaimsOwnCount) {
  auto alternatives = [](const std::string& name) {
    json c = claimObject("default", name, "x.io/gpu", 1);
    c["spec"].erase("extendedResourceNum");
    c["spec"].erase("metadataRequirements");
    c["spec"]["firstAvailable"] = {
        {{"name", "h100"}, {"metadataRequirements", {{"matchLabels", {{"model", "h100"}}}}}},
        {{"name", "two-a100"}, {"extendedResourceNum", 2}}};
    return c;
  };
  json created =
      api_->create(resources::kExtendedResourceClaims, "default", alternatives(uniqueName("alt")));
  EXPECT_EQ(created["spec"]["firstAvailable"][0]["extendedResourceNum"], 1) << "defaulted";
  EXPECT_EQ(created["spec"]["firstAvailable"][1]["extendedResourceNum"], 2);
  api_->remove(resources::kExtendedResourceClaims, "default",
               created["metadata"]["name"].get<std::string>());
  json twice = alternatives(uniqueName("alt"));
  twice["spec"]["firstAvailable"][1]["name"] = "h100";
  expectInvalid(resources::kExtendedResourceClaims, "default", twice,
                "each alternative needs a name of its own");
  json counted = alternatives(uniqueName("alt"));
  counted["spec"]["extendedResourceNum"] = 4;
  expectInvalid(resources::kExtendedResourceClaims, "default", counted, "leave the claim's unset");
  json badName = alternatives(uniqueName("alt"));
  badName["spec"]["firstAvailable"][0]["name"] = "H100";
  expectInvalid(resources::kExtendedResourceClaims, "default", badName, "firstAvailable[0].name");
  std::string out;
  ASSERT_EQ(env_->kubectl("explain erc.spec.firstAvailable", &out), 0) << out;
  EXPECT_NE(out.find("first alternative that fits"), std::string::npos) << out;
  ASSERT_EQ(env_->kubectl("explain erc.status.alternative", &out), 0) << out;
  EXPECT_NE(out.find("allocated as"), std::string::npos) << out;
  ASSERT_EQ(env_->kubectl("explain erct.spec.spec.firstAvailable.metadataRequirements", &out), 0)
      << out;
}

// Named requests replace the claim's own resource, count, selector and alternatives; the API
// server refuses the mixes the extender could not serve, and kubectl explain documents them.
TEST_F(CrdTest, ClaimRequestsAreNamedAndReplaceTheClaimsOwnFields) {
  auto gpuAndNic = [](const std::string& name) {
    json c = claimObject("default", name, "x.io/gpu", 1);
    c["spec"] = {
        {"requests",
         {{{"name", "gpu"},
           {"rawResourceName", "x.io/gpu"},
           {"firstAvailable",
            {{{"name", "h100"}, {"metadataRequirements", {{"matchLabels", {{"model", "h100"}}}}}},
             {{"name", "two-a100"}, {"extendedResourceNum", 2}}}}},
          {{"name", "nic"}, {"rawResourceName", "x.io/nic"}}}},
        {"constraints",
         {{{"matchProperty", "pcieRoot"}},
          {{"distinctProperty", "numaNode"}, {"requests", {"gpu"}}}}}};
    return c;
  };
  json created =
      api_->create(resources::kExtendedResourceClaims, "default", gpuAndNic(uniqueName("req")));
  EXPECT_EQ(created["spec"]["requests"][1]["extendedResourceNum"], 1) << "defaulted";
  EXPECT_EQ(ExtendedResourceClaim::fromJson(created).invalid, "");
  api_->remove(resources::kExtendedResourceClaims, "default",
               created["metadata"]["name"].get<std::string>());
  // A distinctProperty may span several requests: every device of both differs in it.
  json spanning = gpuAndNic(uniqueName("req"));
  spanning["spec"]["constraints"][1].erase("requests");
  created = api_->create(resources::kExtendedResourceClaims, "default", spanning);
  EXPECT_EQ(ExtendedResourceClaim::fromJson(created).invalid, "");
  api_->remove(resources::kExtendedResourceClaims, "default",
               created["metadata"]["name"].get<std::string>());
  const std::vector<std::pair<std::function<void(json&)>, std::string>> bad = {
      {[](json& c) { c["spec"]["rawResourceName"] = "x.io/gpu"; },
       "either rawResourceName or requests"},
      {[](json& c) { c["spec"]["extendedResourceNum"] = 2; }, "leave the claim's unset"},
      {[](json& c) { c["spec"]["requests"][1]["name"] = "gpu"; },
       "each request needs a name of its own"},
      {[](json& c) { c["spec"]["requests"][1].erase("rawResourceName"); }, "rawResourceName"},
      {[](json& c) { c["spec"]["requests"][0]["name"] = "GPU"; }, "requests[0].name"},
      {[](json& c) { c["spec"]["constraints"][0]["requests"] = {"fpga"}; },
       "a constraint's requests name requests of spec.requests"},
      {[](json& c) {
         c["spec"]["constraints"].push_back({{"distinctProperty", "pcieRoot"}});
       },
       "at most one constraint may name a distinctProperty"},
  };
  for (const auto& [change, want] : bad) {
    json c = gpuAndNic(uniqueName("req"));
    change(c);
    expectInvalid(resources::kExtendedResourceClaims, "default", c, want);
  }
  std::string out;
  // kubectl learns the short name from discovery, which may lag the CRD's first use.
  ASSERT_TRUE(eventually([&] { return env_->kubectl("explain erc.spec.requests", &out) == 0; }))
      << out;
  EXPECT_NE(out.find("a GPU and a NIC in one claim"), std::string::npos) << out;
  ASSERT_EQ(env_->kubectl("explain erc.spec.constraints.requests", &out), 0) << out;
  EXPECT_NE(out.find("absent: all of them"), std::string::npos) << out;
  EXPECT_NE(out.find("a PCIe root of its own"), std::string::npos) << out;
  ASSERT_EQ(env_->kubectl("explain erc.status.allocations", &out), 0) << out;
  EXPECT_NE(out.find("each request was allocated"), std::string::npos) << out;
  ASSERT_EQ(env_->kubectl("explain erct.spec.spec.requests.firstAvailable", &out), 0) << out;
}

TEST_F(CrdTest, ConfigAndDeployPassServerSideDryRun) {
  std::string out;
  for (const char* dir : {"config", "config/local", "deploy"}) {
    int rc = env_->kubectl("apply --dry-run=server -f " + env_->repoRoot() + "/" + dir, &out);
    EXPECT_EQ(rc, 0) << dir << ":\n" << out;
  }
}

}  // namespace
}  // namespace ker::itest
