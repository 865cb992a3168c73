#include "model/objects.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "model/claim_transitions.h"

namespace ker {
namespace {

using json = nlohmann::json;

// As `kubectl get extendedresource gpu-n1-0 -o json` prints it, plus fields this code does not
// know (spec.vendorHints, status.conditions, status.observedGeneration) as a newer server might
// send them.
const char* kDeviceJson = R"({
  "apiVersion": "extendedresource.io/v1alpha1",
  "kind": "ExtendedResource",
  "metadata": {
    "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{\"apiVersion\":\"extendedresource.io/v1alpha1\"}\n"},
    "creationTimestamp": "2024-03-01T10:00:00Z",
    "generation": 3,
    "labels": {"node": "n1", "vendor": "nvidia"},
    "managedFields": [
      {"apiVersion": "extendedresource.io/v1alpha1", "fieldsType": "FieldsV1",
       "fieldsV1": {"f:spec": {".": {}, "f:deviceID": {}, "f:rawResourceName": {}}},
       "manager": "kubectl-client-side-apply", "operation": "Update", "time": "2024-03-01T10:00:00Z"},
      {"apiVersion": "extendedresource.io/v1alpha1", "fieldsType": "FieldsV1",
       "fieldsV1": {"f:status": {"f:claimRef": {}, "f:phase": {}}},
       "manager": "ker-scheduler", "operation": "Update", "subresource": "status",
       "time": "2024-03-01T10:05:00Z"}
    ],
    "name": "gpu-n1-0",
    "resourceVersion": "48213",
    "uid": "0b5c3a4e-6f0d-4c59-a0e4-2a8d5e1f9c11"
  },
  "spec": {
    "deviceID": "GPU-5d2f6c1a-93b7-4e1b-8c1e-1a2b3c4d5e6f",
    "nodeAffinity": {
      "required": {
        "nodeSelectorTerms": [
          {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]},
          {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]},
                                {"key": "gpu-count", "operator": "Gt", "values": ["3"]}]}
        ]
      }
    },
    "properties": {"memory": "24Gi", "type": "k80"},
    "rawResourceName": "nvidia.com/gpu",
    "vendorHints": {"mig": true}
  },
  "status": {
    "claimRef": {"name": "train", "namespace": "ml", "uid": "7e1d2c3b-0000-4000-8000-000000000001"},
    "conditions": [{"type": "Healthy", "status": "True", "lastTransitionTime": "2024-03-01T10:00:00Z"}],
    "message": "allocated to claim ml/train",
    "observedGeneration": 3,
    "phase": "Bound",
    "reason": "Allocated"
  }
})";

const char* kClaimJson = R"({
  "apiVersion": "extendedresource.io/v1alpha1",
  "kind": "ExtendedResourceClaim",
  "metadata": {
    "creationTimestamp": "2024-03-01T10:04:00Z",
    "finalizers": ["extendedresource.io/protection"],
    "generation": 1,
    "managedFields": [
      {"apiVersion": "extendedresource.io/v1alpha1", "fieldsType": "FieldsV1",
       "fieldsV1": {"f:spec": {".": {}, "f:extendedResourceNum": {}}},
       "manager": "kubectl-create", "operation": "Update", "time": "2024-03-01T10:04:00Z"}
    ],
    "name": "train",
    "namespace": "ml",
    "resourceVersion": "48190",
    "uid": "7e1d2c3b-0000-4000-8000-000000000001"
  },
  "spec": {
    "extendedResourceNames": ["gpu-n1-0", "gpu-n1-1"],
    "extendedResourceNum": 2,
    "metadataRequirements": {
      "matchExpressions": [{"key": "memory", "operator": "In", "values": ["24Gi", "48Gi"]},
                           {"key": "broken", "operator": "DoesNotExist"}],
      "matchLabels": {"type": "k80"}
    },
    "priorityHint": "high",
    "rawResourceName": "nvidia.com/gpu"
  },
  "status": {
    "extendedResourceNames": ["gpu-n1-0", "gpu-n1-1"],
    "lastTransitionTime": "2024-03-01T10:05:00Z",
    "message": "allocated to pod trainer-0 on node n1",
    "nodeName": "n1",
    "phase": "Bound",
    "podRef": {"name": "trainer-0", "uid": "c0ffee00-1111-4222-8333-444455556666"},
    "reason": "Bound"
  }
})";

const char* kPodJson = R"({
  "apiVersion": "v1",
  "kind": "Pod",
  "metadata": {
    "annotations": {"extendedresource.io/claims": " train , eval,,train ", "prometheus.io/scrape": "true"},
    "creationTimestamp": "2024-03-01T10:04:30Z",
    "deletionGracePeriodSeconds": 30,
    "deletionTimestamp": "2024-03-01T11:00:00Z",
    "labels": {"app": "trainer"},
    "name": "trainer-0",
    "namespace": "ml",
    "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "trainer", "uid": "1", "controller": true}],
    "resourceVersion": "48300",
    "uid": "c0ffee00-1111-4222-8333-444455556666"
  },
  "spec": {
    "containers": [{"name": "main", "image": "busybox", "resources": {}}],
    "nodeName": "n1",
    "schedulerName": "ker-scheduler"
  },
  "status": {"phase": "Running", "podIP": "10.0.0.7"}
})";

const char* kNodeJson = R"({
  "apiVersion": "v1",
  "kind": "Node",
  "metadata": {
    "labels": {"kubernetes.io/hostname": "n1", "zone": "a"},
    "name": "n1",
    "resourceVersion": "1200",
    "uid": "node-uid-1"
  },
  "spec": {"podCIDR": "10.0.0.0/24"},
  "status": {"capacity": {"cpu": "8"}}
})";

TEST(ObjectKey, NamespacedAndClusterScoped) {
  EXPECT_EQ(objectKey("ml", "train"), "ml/train");
  EXPECT_EQ(objectKey("", "gpu-n1-0"), "gpu-n1-0");
}

TEST(Phases, ToString) {
  EXPECT_STREQ(toString(DevicePhase::kAvailable), "Available");
  EXPECT_STREQ(toString(DevicePhase::kBound), "Bound");
  EXPECT_STREQ(toString(DevicePhase::kPending), "Pending");
  EXPECT_STREQ(toString(ClaimPhase::kPending), "Pending");
  EXPECT_STREQ(toString(ClaimPhase::kBound), "Bound");
  EXPECT_STREQ(toString(ClaimPhase::kLost), "Lost");
}

// What a typed view keeps of an object and writes back: all but metadata.managedFields.
json kept(json j) {
  if (j.contains("metadata") && j["metadata"].is_object()) {
    j["metadata"].erase("managedFields");
  }
  return j;
}

// Every status write carries the conditions derived from the status (conditions_test.cpp); the
// tests of the other fields compare without them.
json noConditions(json j) {
  if (j.contains("status") && j["status"].is_object()) {
    j["status"].erase("conditions");
  }
  return j;
}

TEST(ExtendedResource, ParsesKubectlOutput) {
  auto d = ExtendedResource::fromJson(json::parse(kDeviceJson));
  EXPECT_EQ(d.invalid, "");
  EXPECT_EQ(d.meta.name, "gpu-n1-0");
  EXPECT_EQ(d.meta.ns, "");
  EXPECT_EQ(d.meta.uid, "0b5c3a4e-6f0d-4c59-a0e4-2a8d5e1f9c11");
  EXPECT_EQ(d.meta.resourceVersion, "48213");
  EXPECT_EQ(d.meta.creationTimestamp, "2024-03-01T10:00:00Z");
  EXPECT_FALSE(d.meta.deleting);
  EXPECT_EQ(d.meta.labels.at("vendor"), "nvidia");
  EXPECT_EQ(d.meta.annotations.size(), 1u);
  EXPECT_EQ(d.rawResourceName, "nvidia.com/gpu");
  EXPECT_EQ(d.deviceID, "GPU-5d2f6c1a-93b7-4e1b-8c1e-1a2b3c4d5e6f");
  EXPECT_EQ(d.properties,
            (std::map<std::string, std::string>{{"memory", "24Gi"}, {"type", "k80"}}));
  ASSERT_EQ(d.nodeAffinity.terms.size(), 2u);
  EXPECT_TRUE(d.nodeAffinity.terms[0].matchExpressions.empty());
  ASSERT_EQ(d.nodeAffinity.terms[0].matchFields.size(), 1u);
  EXPECT_EQ(d.nodeAffinity.terms[0].matchFields[0].key, "metadata.name");
  EXPECT_EQ(d.nodeAffinity.terms[0].matchFields[0].op, SelectorOperator::kIn);
  EXPECT_EQ(d.nodeAffinity.terms[0].matchFields[0].values, std::vector<std::string>{"n1"});
  ASSERT_EQ(d.nodeAffinity.terms[1].matchExpressions.size(), 2u);
  EXPECT_EQ(d.nodeAffinity.terms[1].matchExpressions[1].op, SelectorOperator::kGt);
  EXPECT_EQ(d.phase, DevicePhase::kBound);
  ASSERT_TRUE(d.claimRef.has_value());
  EXPECT_EQ(*d.claimRef, (ClaimRef{"ml", "train", "7e1d2c3b-0000-4000-8000-000000000001"}));
  EXPECT_EQ(d.reason, "Allocated");
  EXPECT_EQ(d.message, "allocated to claim ml/train");
  EXPECT_EQ(d.raw.parse(), kept(json::parse(kDeviceJson)));
}

TEST(ExtendedResource, AbsentStatusIsAvailable) {
  json j = json::parse(kDeviceJson);
  j.erase("status");
  auto d = ExtendedResource::fromJson(j);
  EXPECT_EQ(d.invalid, "");
  EXPECT_EQ(d.phase, DevicePhase::kAvailable);
  EXPECT_FALSE(d.phaseWritten);
  EXPECT_FALSE(d.claimRef.has_value());
  EXPECT_EQ(d.reason, "");
}

// Absent, null and empty read as Available (Pending for claims) and leave the object to be
// initialised; a phase of any other value, the wrong type included, is written.
TEST(Phases, WrittenOnlyWhenStatusPhaseHasAValue) {
  const json unwritten[] = {json{{"metadata", {{"name", "x"}}}},
                            json{{"status", nullptr}},
                            json{{"status", json::object()}},
                            json{{"status", {{"phase", ""}}}},
                            json{{"status", {{"phase", nullptr}}}},
                            json{{"status", "Bound"}},
                            json::array()};
  for (const auto& j : unwritten) {
    EXPECT_FALSE(ExtendedResource::fromJson(j).phaseWritten) << j.dump();
    EXPECT_FALSE(ExtendedResourceClaim::fromJson(j).phaseWritten) << j.dump();
  }
  const json written[] = {
      json{{"status", {{"phase", "Available"}}}}, json{{"status", {{"phase", "Bound"}}}},
      json{{"status", {{"phase", "Reserved"}}}}, json{{"status", {{"phase", 7}}}}};
  for (const auto& j : written) {
    EXPECT_TRUE(ExtendedResource::fromJson(j).phaseWritten) << j.dump();
    EXPECT_TRUE(ExtendedResourceClaim::fromJson(j).phaseWritten) << j.dump();
  }
  EXPECT_TRUE(ExtendedResource::fromJson(json::parse(kDeviceJson)).phaseWritten);
  EXPECT_TRUE(ExtendedResourceClaim::fromJson(json::parse(kClaimJson)).phaseWritten);
}

TEST(ExtendedResource, RoundTripKeepsUnknownFieldsAndOverlaysStatus) {
  const json original = json::parse(kDeviceJson);
  auto d = ExtendedResource::fromJson(original);
  // An unmodified view writes back exactly what was read, but for managedFields: an update
  // without them keeps the server's.
  EXPECT_EQ(noConditions(d.toJson(SystemTime{})), noConditions(kept(original)));
  // The Healthy condition read keeps its transition time; Allocated is added.
  const json conditions = d.toJson(SystemTime{})["status"]["conditions"];
  ASSERT_EQ(conditions.size(), 2u);
  EXPECT_EQ(conditions[0]["type"], "Allocated");
  EXPECT_EQ(conditions[1]["type"], "Healthy");
  EXPECT_EQ(conditions[1]["lastTransitionTime"], "2024-03-01T10:00:00Z");

  d.phase = DevicePhase::kAvailable;
  d.claimRef.reset();
  d.reason.clear();
  d.message = "released";
  d.meta.resourceVersion = "48250";
  // Typed spec/metadata fields are never written back: only status and resourceVersion are.
  d.rawResourceName = "changed";
  d.meta.labels["new"] = "x";

  json out = d.toJson(SystemTime{});
  json expected = kept(original);
  expected["metadata"]["resourceVersion"] = "48250";
  expected["status"] = {{"observedGeneration", 3}, {"phase", "Available"}, {"message", "released"}};
  EXPECT_EQ(noConditions(out), expected) << out.dump(2);
  EXPECT_EQ(ExtendedResource::fromJson(out).phase, DevicePhase::kAvailable);
}

TEST(ExtendedResource, ToJsonWritesClaimRefAndPhase) {
  json j = json::parse(kDeviceJson);
  j.erase("status");
  auto d = ExtendedResource::fromJson(j);
  d.phase = DevicePhase::kBound;
  d.claimRef = ClaimRef{"ml", "eval", ""};
  json out = d.toJson(SystemTime{});
  EXPECT_EQ(noConditions(out)["status"],
            (json{{"phase", "Bound"}, {"claimRef", {{"namespace", "ml"}, {"name", "eval"}}}}));
  EXPECT_EQ(out["spec"], j["spec"]);
  EXPECT_EQ(out["metadata"], kept(j)["metadata"]);
}

TEST(ExtendedResource, ToJsonWithoutRawBuildsAMinimalObject) {
  ExtendedResource d;
  d.meta.name = "gpu-x";
  d.meta.uid = "u1";
  d.meta.resourceVersion = "7";
  d.phase = DevicePhase::kPending;
  d.reason = "Unhealthy";
  EXPECT_EQ(noConditions(d.toJson(SystemTime{})), json::parse(R"({
    "apiVersion": "extendedresource.io/v1alpha1", "kind": "ExtendedResource",
    "metadata": {"name": "gpu-x", "uid": "u1", "resourceVersion": "7"},
    "status": {"phase": "Pending", "reason": "Unhealthy"}})"));
}

TEST(ExtendedResource, EmptyResourceVersionDropsThePrecondition) {
  auto d = ExtendedResource::fromJson(json::parse(kDeviceJson));
  d.meta.resourceVersion.clear();
  EXPECT_FALSE(d.toJson(SystemTime{})["metadata"].contains("resourceVersion"));
}

TEST(ExtendedResource, WrongShapedFieldsAreNamedNotThrown) {
  struct Case {
    const char* pointer;
    json value;
    const char* expectInInvalid;
  };
  const std::vector<Case> cases = {
      {"/spec/deviceID", 42, "spec.deviceID: expected a string, got number"},
      {"/spec/properties", json::array({"a"}), "spec.properties: expected an object"},
      {"/spec/properties/type", true, "spec.properties.type: expected a string"},
      {"/spec/nodeAffinity", "n1", "spec.nodeAffinity: expected an object"},
      {"/spec/nodeAffinity/required/nodeSelectorTerms", json::object(),
       "spec.nodeAffinity.required.nodeSelectorTerms: expected an array"},
      {"/spec/nodeAffinity/required/nodeSelectorTerms/0/matchFields/0/values", "n1",
       "spec.nodeAffinity.required.nodeSelectorTerms[0].matchFields[0].values: expected an "
       "array of strings"},
      {"/spec/nodeAffinity/required/nodeSelectorTerms/1/matchExpressions/1/values/0", "three",
       "spec.nodeAffinity.required: nodeSelectorTerms[1].matchExpressions[1].values[0]: "
       "\"three\" is not an integer"},
      {"/spec/nodeAffinity/required/nodeSelectorTerms/0/matchFields/0/operator", "Exists",
       "spec.nodeAffinity.required: nodeSelectorTerms[0].matchFields[0].operator"},
      {"/spec/rawResourceName", nullptr, "spec.rawResourceName: required"},
      {"/spec", "gpu", "spec: expected an object, got string"},
      {"/status", json::array(), "status: expected an object, got array"},
      {"/status/phase", "Reserved", "status.phase: unknown phase \"Reserved\""},
      {"/status/phase", 1, "status.phase: expected a string"},
      {"/status/claimRef", "ml/train", "status.claimRef: expected an object"},
      {"/status/claimRef/uid", 5, "status.claimRef.uid: expected a string"},
      {"/status/reason", json::object(), "status.reason: expected a string"},
      {"/metadata/labels", "x", "metadata.labels: expected an object"},
      {"/metadata/annotations/a", 1, "metadata.annotations.a: expected a string"},
      {"/metadata/resourceVersion", 48213, "metadata.resourceVersion: expected a string"},
  };
  for (const auto& c : cases) {
    json j = json::parse(kDeviceJson);
    j[json::json_pointer(c.pointer)] = c.value;
    ExtendedResource d;
    ASSERT_NO_THROW(d = ExtendedResource::fromJson(j)) << c.pointer;
    EXPECT_NE(d.invalid.find(c.expectInInvalid), std::string::npos)
        << c.pointer << " gave: " << d.invalid;
    EXPECT_EQ(d.raw.parse(), kept(j));
  }
}

TEST(ExtendedResource, OneBadFieldKeepsTheRest) {
  json j = json::parse(kDeviceJson);
  j["metadata"]["labels"] = 7;
  j["status"]["phase"] = "Weird";
  auto d = ExtendedResource::fromJson(j);
  EXPECT_EQ(d.meta.name, "gpu-n1-0");
  EXPECT_EQ(d.meta.uid, "0b5c3a4e-6f0d-4c59-a0e4-2a8d5e1f9c11");
  EXPECT_EQ(d.rawResourceName, "nvidia.com/gpu");
  EXPECT_TRUE(d.claimRef.has_value());
  EXPECT_EQ(d.invalid,
            "metadata.labels: expected an object, got number; status.phase: unknown phase "
            "\"Weird\"");
}

TEST(ExtendedResource, NullOptionalFieldsCountAsAbsent) {
  json j = json::parse(kDeviceJson);
  j["spec"]["properties"] = nullptr;
  j["status"]["claimRef"] = nullptr;
  j["metadata"]["labels"] = nullptr;
  auto d = ExtendedResource::fromJson(j);
  EXPECT_EQ(d.invalid, "");
  EXPECT_TRUE(d.properties.empty());
  EXPECT_FALSE(d.claimRef.has_value());
  EXPECT_TRUE(d.meta.labels.empty());
}

TEST(ExtendedResource, DeletionTimestampMeansDeleting) {
  json j = json::parse(kDeviceJson);
  j["metadata"]["deletionTimestamp"] = "2024-03-01T12:00:00Z";
  EXPECT_TRUE(ExtendedResource::fromJson(j).meta.deleting);
}

TEST(ExtendedResource, AnyJsonValueIsSurvived) {
  for (const json& j :
       {json(), json(1), json("x"), json::array({1, 2}), json(true), json(1.5), json::object()}) {
    ExtendedResource d;
    ASSERT_NO_THROW(d = ExtendedResource::fromJson(j)) << j.dump();
    EXPECT_FALSE(d.invalid.empty()) << j.dump();
    ASSERT_NO_THROW(d.toJson(SystemTime{})) << j.dump();
    ExtendedResourceClaim c;
    ASSERT_NO_THROW(c = ExtendedResourceClaim::fromJson(j)) << j.dump();
    EXPECT_FALSE(c.invalid.empty()) << j.dump();
    ASSERT_NO_THROW(c.toJson(SystemTime{})) << j.dump();
    Pod p;
    ASSERT_NO_THROW(p = Pod::fromJson(j)) << j.dump();
    EXPECT_NO_THROW(Node::fromJson(j)) << j.dump();
  }
  EXPECT_EQ(ExtendedResource::fromJson(json::array()).invalid, "expected a JSON object, got array");
  EXPECT_EQ(Pod::fromJson(json()).invalid, "expected a JSON object, got null");
}

TEST(ExtendedResource, GarbledMetadataIsNotRewrittenByToJson) {
  json j = json::parse(kDeviceJson);
  j["metadata"] = "oops";
  auto d = ExtendedResource::fromJson(j);
  EXPECT_NE(d.invalid.find("metadata: expected an object"), std::string::npos);
  json out;
  ASSERT_NO_THROW(out = d.toJson(SystemTime{}));
  EXPECT_EQ(out["metadata"], "oops");
}

// A claim's selector may compare properties as quantities; the reader keeps the comparison and
// refuses one whose value is not a quantity, as the CRD's rule does.
TEST(ExtendedResourceClaim, ReadsQuantityComparisons) {
  json j = json::parse(kClaimJson);
  j["spec"]["metadataRequirements"] = {
      {"matchExpressions", {{{"key", "memory"}, {"operator", "Ge"}, {"values", {"40Gi"}}}}}};
  auto c = ExtendedResourceClaim::fromJson(j);
  EXPECT_EQ(c.invalid, "");
  ASSERT_EQ(c.metadataRequirements.matchExpressions.size(), 1u);
  EXPECT_EQ(c.metadataRequirements.matchExpressions[0].op, SelectorOperator::kGe);
  EXPECT_EQ(c.toJson(SystemTime{})["spec"]["metadataRequirements"],
            j["spec"]["metadataRequirements"]);

  j["spec"]["metadataRequirements"]["matchExpressions"][0]["values"] = {"40GB"};
  EXPECT_EQ(ExtendedResourceClaim::fromJson(j).invalid,
            "spec.metadataRequirements: matchExpressions[0].values[0]: \"40GB\" is not a quantity "
            "(operator Ge; e.g. 40Gi, 1.5, 500m)");
}

TEST(ExtendedResourceClaim, ReadsConstraints) {
  json j = json::parse(kClaimJson);
  j["spec"]["constraints"] = {{{"matchProperty", "numaNode"}}, {{"matchProperty", "pciRoot"}}};
  auto c = ExtendedResourceClaim::fromJson(j);
  EXPECT_EQ(c.invalid, "");
  EXPECT_EQ(c.constraints, (std::vector<DeviceConstraint>{{"numaNode"}, {"pciRoot"}}));
  j["spec"]["constraints"] = {{{"matchProperty", "numaNode"}}, {{"distinctProperty", "pciRoot"}}};
  c = ExtendedResourceClaim::fromJson(j);
  EXPECT_EQ(c.invalid, "");
  EXPECT_EQ(c.constraints, (std::vector<DeviceConstraint>{{"numaNode", ""}, {"", "pciRoot"}}));
  j["spec"]["constraints"] = {{{"matchProperty", ""}}};
  EXPECT_EQ(ExtendedResourceClaim::fromJson(j).invalid,
            "spec.constraints[0]: needs exactly one of matchProperty and distinctProperty, a "
            "property name");
  j["spec"]["constraints"] = {{{"matchProperty", "numaNode"}, {"distinctProperty", "pciRoot"}}};
  EXPECT_EQ(ExtendedResourceClaim::fromJson(j).invalid,
            "spec.constraints[0]: needs exactly one of matchProperty and distinctProperty, a "
            "property name");
  j["spec"]["constraints"] = {{{"distinctProperty", "numaNode"}},
                              {{"distinctProperty", "pciRoot"}}};
  EXPECT_EQ(ExtendedResourceClaim::fromJson(j).invalid,
            "spec.constraints[1].distinctProperty: only one constraint of a claim may be distinct");
  j["spec"]["constraints"] = "numaNode";
  EXPECT_NE(ExtendedResourceClaim::fromJson(j).invalid.find("spec.constraints: expected an array"),
            std::string::npos);
}

TEST(ExtendedResourceClaim, ParsesKubectlOutput) {
  auto c = ExtendedResourceClaim::fromJson(json::parse(kClaimJson));
  EXPECT_EQ(c.invalid, "");
  EXPECT_EQ(c.meta.name, "train");
  EXPECT_EQ(c.meta.ns, "ml");
  EXPECT_EQ(c.meta.resourceVersion, "48190");
  EXPECT_EQ(c.rawResourceName, "nvidia.com/gpu");
  EXPECT_EQ(c.extendedResourceNum, 2);
  EXPECT_EQ(c.metadataRequirements.matchLabels,
            (std::map<std::string, std::string>{{"type", "k80"}}));
  ASSERT_EQ(c.metadataRequirements.matchExpressions.size(), 2u);
  EXPECT_EQ(c.metadataRequirements.matchExpressions[0].key, "memory");
  EXPECT_EQ(c.metadataRequirements.matchExpressions[0].op, SelectorOperator::kIn);
  EXPECT_EQ(c.metadataRequirements.matchExpressions[0].values,
            (std::vector<std::string>{"24Gi", "48Gi"}));
  EXPECT_EQ(c.metadataRequirements.matchExpressions[1].op, SelectorOperator::kDoesNotExist);
  EXPECT_TRUE(c.metadataRequirements.matchExpressions[1].values.empty());
  ASSERT_TRUE(c.extendedResourceNames.has_value());
  EXPECT_EQ(*c.extendedResourceNames, (std::vector<std::string>{"gpu-n1-0", "gpu-n1-1"}));
  EXPECT_EQ(c.phase, ClaimPhase::kBound);
  EXPECT_EQ(c.allocated, (std::vector<std::string>{"gpu-n1-0", "gpu-n1-1"}));
  EXPECT_EQ(c.nodeName, "n1");
  ASSERT_TRUE(c.podRef.has_value());
  EXPECT_EQ(*c.podRef, (PodRef{"trainer-0", "c0ffee00-1111-4222-8333-444455556666"}));
  EXPECT_EQ(c.reason, "Bound");
  EXPECT_EQ(c.message, "allocated to pod trainer-0 on node n1");
}

TEST(ExtendedResourceClaim, Defaults) {
  auto c = ExtendedResourceClaim::fromJson(json::parse(R"({
    "apiVersion": "extendedresource.io/v1alpha1", "kind": "ExtendedResourceClaim",
    "metadata": {"name": "one", "namespace": "default", "resourceVersion": "1", "uid": "u"},
    "spec": {"rawResourceName": "example.com/fpga", "extendedResourceNames": []}})"));
  EXPECT_EQ(c.invalid, "");
  EXPECT_EQ(c.extendedResourceNum, 1);
  EXPECT_TRUE(c.metadataRequirements.matchLabels.empty());
  EXPECT_TRUE(c.metadataRequirements.matchExpressions.empty());
  EXPECT_FALSE(c.extendedResourceNames.has_value());
  EXPECT_EQ(c.phase, ClaimPhase::kPending);
  EXPECT_TRUE(c.allocated.empty());
  EXPECT_FALSE(c.podRef.has_value());
}

TEST(ExtendedResourceClaim, ASharedClaimListsItsHoldersAndWritesThemBack) {
  json j = json::parse(kClaimJson);
  j["spec"]["shareable"] = true;
  j["status"].erase("podRef");
  j["status"]["holders"] = json::parse(R"([{"name": "a", "uid": "ua"}, {"name": "b"}])");
  auto c = ExtendedResourceClaim::fromJson(j);
  EXPECT_EQ(c.invalid, "");
  EXPECT_TRUE(c.shareable);
  EXPECT_FALSE(c.podRef);
  EXPECT_EQ(c.holders(), (std::vector<PodRef>{{"a", "ua"}, {"b", ""}}));
  EXPECT_TRUE(c.heldBy("ua"));
  EXPECT_TRUE(c.heldBy("", "b"));
  EXPECT_FALSE(c.heldBy("ub"));
  EXPECT_EQ(c.holderNames(), "a, b");
  EXPECT_EQ(c.toJson(SystemTime{})["status"]["holders"], j["status"]["holders"]);
  ASSERT_TRUE(releaseClaim(c, "pods gone").ok());
  EXPECT_TRUE(c.holders().empty());
  EXPECT_FALSE(c.toJson(SystemTime{})["status"].contains("holders"));
}

TEST(ExtendedResourceClaim, AClaimOfTodayIsHeldByItsPodRef) {
  auto c = ExtendedResourceClaim::fromJson(json::parse(kClaimJson));
  EXPECT_FALSE(c.shareable);
  EXPECT_EQ(c.holders(), (std::vector<PodRef>{*c.podRef}));
  EXPECT_FALSE(c.toJson(SystemTime{})["status"].contains("holders"));
}

TEST(ExtendedResourceClaim, BadlyShapedSharingFieldsAreInvalid) {
  json j = json::parse(kClaimJson);
  j["spec"]["shareable"] = "yes";
  EXPECT_EQ(ExtendedResourceClaim::fromJson(j).invalid,
            "spec.shareable: expected a boolean, got string");
  j = json::parse(kClaimJson);
  j["status"]["holders"] = json::parse(R"([{"name": 3}])");
  auto c = ExtendedResourceClaim::fromJson(j);
  EXPECT_NE(c.invalid.find("status.holders[0].name"), std::string::npos) << c.invalid;
  EXPECT_FALSE(c.statusReadable);
}

TEST(ExtendedResourceClaim, BadNumbersAreInvalid) {
  const std::vector<std::pair<json, std::string>> cases = {
      {"2", "spec.extendedResourceNum: not an integer (string)"},
      {2.5, "spec.extendedResourceNum: not an integer (number)"},
      {0, "spec.extendedResourceNum: must be at least 1"},
      {-3, "spec.extendedResourceNum: must be at least 1"},
      {json(18446744073709551615ull), "spec.extendedResourceNum: out of range"},
      {true, "spec.extendedResourceNum: not an integer (boolean)"},
  };
  for (const auto& [value, why] : cases) {
    json j = json::parse(kClaimJson);
    j["spec"]["extendedResourceNum"] = value;
    EXPECT_EQ(ExtendedResourceClaim::fromJson(j).invalid, why) << value.dump();
  }
  json big = json::parse(kClaimJson);
  big["spec"]["extendedResourceNum"] = 1024;
  EXPECT_EQ(ExtendedResourceClaim::fromJson(big).extendedResourceNum, 1024);
}

TEST(ExtendedResourceClaim, ASpecProblemLeavesTheStatusReadable) {
  json j = json::parse(kClaimJson);
  j["spec"]["extendedResourceNum"] = 0;
  auto c = ExtendedResourceClaim::fromJson(j);
  EXPECT_FALSE(c.invalid.empty());
  EXPECT_TRUE(c.statusReadable);

  j["status"] = {{"phase", "Bound"}, {"podRef", "p"}};
  c = ExtendedResourceClaim::fromJson(j);
  EXPECT_NE(c.invalid.find("status.podRef"), std::string::npos) << c.invalid;
  EXPECT_NE(c.invalid.find("spec.extendedResourceNum"), std::string::npos) << c.invalid;
  EXPECT_FALSE(c.statusReadable);

  EXPECT_FALSE(ExtendedResourceClaim::fromJson(json::array()).statusReadable);
  EXPECT_TRUE(ExtendedResourceClaim::fromJson(json::parse(kClaimJson)).statusReadable);
}

TEST(ExtendedResourceClaim, WrongShapedFieldsAreNamed) {
  const std::vector<std::pair<const char*, json>> cases = {
      {"/spec/metadataRequirements", "type=k80"},
      {"/spec/metadataRequirements/matchLabels/type", 80},
      {"/spec/metadataRequirements/matchExpressions", json::object()},
      {"/spec/metadataRequirements/matchExpressions/0", "memory"},
      {"/spec/metadataRequirements/matchExpressions/0/values", "24Gi"},
      {"/spec/metadataRequirements/matchExpressions/0/operator", "Matches"},
      {"/spec/metadataRequirements/matchExpressions/1/values", json::array({"x"})},
      {"/spec/extendedResourceNames", "gpu-n1-0"},
      {"/spec/extendedResourceNames/1", 1},
      {"/status/phase", "Released"},
      {"/status/extendedResourceNames", json::object()},
      {"/status/nodeName", json::array()},
      {"/status/podRef", "trainer-0"},
      {"/status/podRef/name", 0},
      {"/status/lostExtendedResourceNames", "gpu-n1-9"},
  };
  const std::vector<std::string> expected = {
      "spec.metadataRequirements: expected an object, got string",
      "spec.metadataRequirements.matchLabels.type: expected a string, got number",
      "spec.metadataRequirements.matchExpressions: expected an array, got object",
      "spec.metadataRequirements.matchExpressions[0]: expected an object, got string",
      "spec.metadataRequirements.matchExpressions[0].values: expected an array of strings, got "
      "string",
      "spec.metadataRequirements.matchExpressions[0].operator: \"Matches\" is not one of In, "
      "NotIn, Exists, DoesNotExist, Gt, Ge, Lt, Le",
      "spec.metadataRequirements: matchExpressions[1].values: must be empty for operator "
      "DoesNotExist",
      "spec.extendedResourceNames: expected an array of strings, got string",
      "spec.extendedResourceNames[1]: expected a string, got number",
      "status.phase: unknown phase \"Released\"",
      "status.extendedResourceNames: expected an array of strings, got object",
      "status.nodeName: expected a string, got array",
      "status.podRef: expected an object, got string",
      "status.podRef.name: expected a string, got number",
      "status.lostExtendedResourceNames: expected an array of strings, got string",
  };
  ASSERT_EQ(cases.size(), expected.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    json j = json::parse(kClaimJson);
    j[json::json_pointer(cases[i].first)] = cases[i].second;
    auto c = ExtendedResourceClaim::fromJson(j);
    EXPECT_EQ(c.invalid, expected[i]) << cases[i].first;
    EXPECT_EQ(c.meta.name, "train");
  }
}

TEST(ExtendedResourceClaim, RoundTripAndStatusOverlay) {
  const json original = json::parse(kClaimJson);
  auto c = ExtendedResourceClaim::fromJson(original);
  EXPECT_EQ(noConditions(c.toJson(SystemTime{})), noConditions(kept(original)));

  // What the binder does when it undoes a bind.
  ASSERT_TRUE(undoClaimBind(c).ok());
  c.extendedResourceNum = 5;  // spec is never written from the typed view
  json out = c.toJson(SystemTime{});
  json expected = kept(original);
  expected["status"] = {{"phase", "Pending"}, {"lastTransitionTime", "2024-03-01T10:05:00Z"}};
  EXPECT_EQ(noConditions(out), expected) << out.dump(2);

  c.phase = ClaimPhase::kLost;
  c.allocated = {"gpu-n1-1"};
  c.lost = {"gpu-n1-0"};
  c.nodeName = "n2";
  c.podRef = PodRef{"trainer-1", ""};
  c.reason = "DeviceGone";
  c.meta.resourceVersion = "50000";
  out = c.toJson(SystemTime{});
  EXPECT_EQ(noConditions(out)["status"],
            json::parse(R"({"phase": "Lost", "extendedResourceNames": ["gpu-n1-1"],
      "lostExtendedResourceNames": ["gpu-n1-0"], "nodeName": "n2",
      "podRef": {"name": "trainer-1"}, "reason": "DeviceGone",
      "lastTransitionTime": "2024-03-01T10:05:00Z"})"));
  EXPECT_EQ(out["metadata"]["resourceVersion"], "50000");
  EXPECT_FALSE(out["metadata"].contains("managedFields"));
  EXPECT_EQ(out["spec"], original["spec"]);

  auto back = ExtendedResourceClaim::fromJson(out);
  EXPECT_EQ(back.invalid, "");
  EXPECT_EQ(back.phase, ClaimPhase::kLost);
  EXPECT_EQ(back.allocated, c.allocated);
  EXPECT_EQ(back.lost, c.lost);
  EXPECT_EQ(back.listedDevices(), (std::vector<std::string>{"gpu-n1-1", "gpu-n1-0"}));
  EXPECT_EQ(back.podRef, c.podRef);
}

// A count the binder writes on each reuse of a claim; absent while 0, so claims written
// before it existed round-trip unchanged, and released with the claim.
TEST(ExtendedResourceClaim, BindRewritesAreACountWrittenOnlyWhenSet) {
  auto c = ExtendedResourceClaim::fromJson(json::parse(kClaimJson));
  EXPECT_EQ(c.bindRewrites, 0);
  EXPECT_FALSE(c.toJson(SystemTime{})["status"].contains("bindRewrites"));
  c.bindRewrites = 2;
  const json out = c.toJson(SystemTime{});
  EXPECT_EQ(out["status"]["bindRewrites"], 2);
  EXPECT_EQ(ExtendedResourceClaim::fromJson(out).bindRewrites, 2);
  ASSERT_TRUE(releaseClaim(c, "pod gone").ok());
  EXPECT_EQ(c.bindRewrites, 0);
  EXPECT_FALSE(c.toJson(SystemTime{})["status"].contains("bindRewrites"));

  const std::vector<std::pair<json, std::string>> cases = {
      {"2", "status.bindRewrites: expected an integer, got string"},
      {1.5, "status.bindRewrites: expected an integer, got number"},
      {-1, "status.bindRewrites: must be at least 0"},
  };
  for (const auto& [value, why] : cases) {
    json j = json::parse(kClaimJson);
    j["status"]["bindRewrites"] = value;
    const auto bad = ExtendedResourceClaim::fromJson(j);
    EXPECT_EQ(bad.invalid, why) << value.dump();
    EXPECT_EQ(bad.bindRewrites, 0) << value.dump();
    EXPECT_FALSE(bad.statusReadable) << value.dump();
  }
}

TEST(ExtendedResourceClaim, HeldDevicesAreWhatBoundAndLostClaimsList) {
  ExtendedResourceClaim c;
  c.allocated = {"a"};
  c.lost = {"b"};
  EXPECT_TRUE(c.heldDevices().empty()) << "Pending holds nothing";
  c.phase = ClaimPhase::kBound;
  EXPECT_EQ(c.heldDevices(), (std::vector<std::string>{"a", "b"}));
  c.phase = ClaimPhase::kLost;
  EXPECT_EQ(c.heldDevices(), (std::vector<std::string>{"a", "b"}));
  c.statusReadable = false;
  EXPECT_TRUE(c.heldDevices().empty());
}

TEST(Pod, ParsesKubectlOutput) {
  auto p = Pod::fromJson(json::parse(kPodJson));
  EXPECT_EQ(p.invalid, "");
  EXPECT_EQ(p.meta.name, "trainer-0");
  EXPECT_EQ(p.meta.ns, "ml");
  EXPECT_EQ(p.meta.uid, "c0ffee00-1111-4222-8333-444455556666");
  EXPECT_TRUE(p.meta.deleting);
  EXPECT_EQ(p.nodeName, "n1");
  EXPECT_EQ(p.schedulerName, "ker-scheduler");
  EXPECT_EQ(p.phase, "Running");
  EXPECT_FALSE(p.finished());
  EXPECT_EQ(p.claims, (std::vector<std::string>{"train", "eval"}));
}

TEST(Pod, NoAnnotationMeansNoClaims) {
  json j = json::parse(kPodJson);
  j["metadata"].erase("annotations");
  auto p = Pod::fromJson(j);
  EXPECT_EQ(p.invalid, "");
  EXPECT_TRUE(p.claims.empty());
}

TEST(Pod, GarbledClaimsAnnotationIsInvalid) {
  json j = json::parse(kPodJson);
  j["metadata"]["annotations"][kClaimsAnnotation] = "train, Bad_Name";
  auto p = Pod::fromJson(j);
  EXPECT_TRUE(p.claims.empty());
  EXPECT_EQ(p.invalid.rfind("annotation extendedresource.io/claims: \"Bad_Name\" is not a valid "
                            "claim name",
                            0),
            0u)
      << p.invalid;
  EXPECT_EQ(p.meta.name, "trainer-0");
}

TEST(Pod, FinishedPhases) {
  json j = json::parse(kPodJson);
  j["status"]["phase"] = "Succeeded";
  EXPECT_TRUE(Pod::fromJson(j).finished());
  j["status"]["phase"] = "Failed";
  EXPECT_TRUE(Pod::fromJson(j).finished());
  j["status"]["phase"] = "Pending";
  EXPECT_FALSE(Pod::fromJson(j).finished());
}

TEST(Node, ParsesMetadata) {
  auto n = Node::fromJson(json::parse(kNodeJson));
  EXPECT_EQ(n.meta.name, "n1");
  EXPECT_EQ(n.meta.resourceVersion, "1200");
  EXPECT_EQ(n.meta.labels,
            (std::map<std::string, std::string>{{"kubernetes.io/hostname", "n1"}, {"zone", "a"}}));
}

TEST(ParseClaimsAnnotation, SplitsTrimsSkipsAndDedups) {
  EXPECT_EQ(parseClaimsAnnotation("a, b,c"), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(parseClaimsAnnotation(" b ,a,,b,\ta , "), (std::vector<std::string>{"b", "a"}));
  EXPECT_TRUE(parseClaimsAnnotation("").empty());
  EXPECT_TRUE(parseClaimsAnnotation(" , ,").empty());
  EXPECT_EQ(parseClaimsAnnotation("gpu.claims.example-1"),
            std::vector<std::string>{"gpu.claims.example-1"});
  EXPECT_EQ(parseClaimsAnnotation(std::string(253, 'a')).size(), 1u);
}

TEST(ParseClaimsAnnotation, RejectsNonDns1123Names) {
  for (const std::string bad : {"Upper", "under_score", "-lead", "trail-", "a..b", "a.-b", "a-.b",
                                ".a", "a.", "sp ace", "sl/ash", "ünï"}) {
    try {
      parseClaimsAnnotation("ok," + bad);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("\"" + bad + "\""), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(parseClaimsAnnotation(std::string(254, 'a')), std::invalid_argument);
}

TEST(ParseHelpers, ThrowNamingTheField) {
  EXPECT_EQ(parseLabelSelector(json()).matchLabels.size(), 0u);
  auto sel = parseLabelSelector(json::parse(R"({"matchLabels": {"a": "1"},
      "matchExpressions": [{"key": "b", "operator": "Exists"}]})"));
  EXPECT_EQ(sel.matchLabels.at("a"), "1");
  ASSERT_EQ(sel.matchExpressions.size(), 1u);
  EXPECT_EQ(sel.matchExpressions[0].op, SelectorOperator::kExists);
  try {
    parseLabelSelector(json::parse(R"({"matchExpressions": [{"key": 1}]})"));
    ADD_FAILURE();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "matchExpressions[0].key: expected a string, got number");
  }

  auto ns = parseNodeSelector(json::parse(R"({"nodeSelectorTerms": [null,
      {"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["c"]}]}]})"));
  ASSERT_EQ(ns.terms.size(), 2u);
  EXPECT_TRUE(ns.terms[0].matchExpressions.empty());
  EXPECT_EQ(ns.terms[1].matchExpressions[0].values, std::vector<std::string>{"c"});
  try {
    parseNodeSelector(json::parse(R"({"nodeSelectorTerms": [{"matchFields": 3}]})"));
    ADD_FAILURE();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "nodeSelectorTerms[0].matchFields: expected an array, got number");
  }

  auto meta = parseObjectMeta(json::parse(kNodeJson)["metadata"]);
  EXPECT_EQ(meta.name, "n1");
  try {
    parseObjectMeta(json::parse(R"({"name": "x", "labels": {"a": 1}})"));
    ADD_FAILURE();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "metadata.labels.a: expected a string, got number");
  }
}

TEST(RawObject, KeepsEverythingButManagedFields) {
  json j = json::parse(kDeviceJson);
  j["metadata"]["managedFields"] = json::array({{{"manager", "kubectl"}, {"operation", "Apply"}}});
  j["spec"]["futureField"] = {{"nested", true}};
  const ExtendedResource d = ExtendedResource::fromJson(j);
  json expected = j;
  expected["metadata"].erase("managedFields");
  EXPECT_EQ(d.raw.parse(), expected);
  EXPECT_FALSE(d.toJson(SystemTime{})["metadata"].contains("managedFields"))
      << "an update without managedFields keeps the server's";
  EXPECT_EQ(d.toJson(SystemTime{})["spec"]["futureField"]["nested"], true);
}

TEST(RawObject, NullKeepsNothingAndNonObjectsSurvive) {
  EXPECT_TRUE(RawObject().empty());
  EXPECT_TRUE(RawObject(json()).parse().is_null());
  EXPECT_EQ(RawObject(json::array({1, 2})).parse(), json::array({1, 2}));
  EXPECT_EQ(RawObject(json{{"metadata", "garbled"}}).parse(), (json{{"metadata", "garbled"}}));
}

// A container-scoped list the pod's author wrote takes precedence for that container in NRI:
// the bind adds the agent to it as well, so no container of the pod can opt out.
TEST(RequiredPluginsTest, TheBindRequiresTheAgentInEveryScopedList) {
  const std::map<std::string, std::string> pod{
      {"required-plugins.noderesource.dev/container.app", "[]"},
      {"required-plugins.noderesource.dev/container.side", R"(["other"])"},
      {"required-plugins.noderesource.dev/container.bad", "{}"},
      {"unrelated", "x"}};
  EXPECT_EQ(requiredPluginsAnnotations(pod, "agent"),
            (std::map<std::string, std::string>{
                {kRequiredPluginsAnnotation, R"(["agent"])"},
                {"required-plugins.noderesource.dev/container.app", R"(["agent"])"},
                {"required-plugins.noderesource.dev/container.bad", R"(["agent"])"},
                {"required-plugins.noderesource.dev/container.side", R"(["other","agent"])"}}));
}

// The device names the pods it was given to: read back as written.
TEST(ExtendedResourceTest, HoldersRoundTrip) {
  json obj = {{"metadata", {{"name", "d0"}}},
              {"spec", {{"rawResourceName", "nvidia.com/gpu"}}},
              {"status",
               {{"phase", "Bound"},
                {"claimRef", {{"namespace", "ns"}, {"name", "c"}, {"uid", "uc"}}},
                {"holders", {{{"name", "p"}, {"uid", "up"}}, {{"name", "q"}}}}}}};
  const ExtendedResource d = ExtendedResource::fromJson(obj);
  ASSERT_EQ(d.invalid, "");
  EXPECT_EQ(d.holders, (std::vector<PodRef>{{"p", "up"}, {"q", ""}}));
  const json written = d.toJson(SystemTime{});
  EXPECT_EQ(written["status"]["holders"], obj["status"]["holders"]);
  ExtendedResource freed = d;
  freed.holders.clear();
  EXPECT_FALSE(freed.toJson(SystemTime{})["status"].contains("holders"));
  obj["status"]["holders"] = "p";
  EXPECT_NE(ExtendedResource::fromJson(obj).invalid.find("status.holders"), std::string::npos);
}

}  // namespace
}  // namespace ker
