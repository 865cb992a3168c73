#include "bench/pipeline_objects.h"

#include <stdexcept>

#include "bench/cluster.h"
#include "model/objects.h"

namespace ker::bench::pipeline {

using json = nlohmann::json;

namespace resources {
const Resource kResourceSlices{"resource.k8s.io", "v1", "resourceslices", false};
const Resource kDeviceClasses{"resource.k8s.io", "v1", "deviceclasses", false};
const Resource kResourceClaims{"resource.k8s.io", "v1", "resourceclaims", true};
const Resource kReplicaSets{"apps", "v1", "replicasets", true};
}  // namespace resources

namespace {

bool isK80(int d) {
  return d < kK80PerNode;
}

}  // namespace

const char* variantName(Variant v) {
  switch (v) {
    case Variant::kExtender:
      return "extender";
    case Variant::kDra:
      return "dra";
    case Variant::kNoClaims:
      return "no-claims";
    case Variant::kTemplates:
      return "templates";
    case Variant::kClasses:
      return "classes";
    case Variant::kClassesRouted:
      return "classes-routed";
    case Variant::kDraClasses:
      return "dra-classes";
  }
  return "?";
}

Variant parseVariant(const std::string& name) {
  std::string known;
  for (Variant v : kVariants) {
    if (name == variantName(v)) {
      return v;
    }
    known += std::string(known.empty() ? "" : ", ") + variantName(v);
  }
  throw std::invalid_argument("unknown variant '" + name + "' (" + known + ")");
}

bool usesDraClaims(Variant v) {
  return v == Variant::kDra || v == Variant::kDraClasses;
}

bool claimsMadePerPod(Variant v) {
  return v == Variant::kClasses || v == Variant::kClassesRouted || v == Variant::kDraClasses;
}

json extendedResource(size_t node, int d) {
  json er = bench::device(node, d);
  er["spec"]["properties"] = {{"type", isK80(d) ? "k80" : "p100"},
                              {"memory", isK80(d) ? "12Gi" : "16Gi"}};
  er["metadata"]["finalizers"] = {kDeviceProtectionFinalizer};
  return er;
}

json resourceSlice(size_t node) {
  const std::string name = nodeName(node);
  json devices = json::array();
  for (int d = 0; d < kDevicesPerNode; ++d) {
    devices.push_back({{"name", "gpu" + std::to_string(d)},
                       {"attributes", {{"type", {{"string", isK80(d) ? "k80" : "p100"}}}}},
                       {"capacity", {{"memory", {{"value", isK80(d) ? "12Gi" : "16Gi"}}}}}});
  }
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceSlice"},
          {"metadata", {{"name", name + "-" + kDriver}}},
          {"spec",
           {{"driver", kDriver},
            {"nodeName", name},
            {"pool", {{"name", name}, {"generation", 1}, {"resourceSliceCount", 1}}},
            {"devices", devices}}}};
}

json deviceClass() {
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "DeviceClass"},
          {"metadata", {{"name", kDriver}}},
          {"spec",
           {{"selectors",
             {{{"cel", {{"expression", std::string("device.driver == \"") + kDriver + "\""}}}}}}}}};
}

json mappedDeviceClass() {
  json c = deviceClass();
  c["metadata"]["name"] = kMappedDeviceClass;
  c["spec"]["extendedResourceName"] = kDraClassResourceName;
  return c;
}

json extendedResourceClass() {
  return {{"apiVersion", "extendedresource.io/v1alpha1"},
          {"kind", "ExtendedResourceClass"},
          {"metadata", {{"name", kClassName}}},
          {"spec", {{"extendedResourceName", kClassResourceName}, {"rawResourceName", kResource}}}};
}

json nodeObject(size_t i) {
  json n = kubeletNode(i);
  n["status"].update(classCapacityPatch()["status"], true);
  return n;
}

json classCapacityPatch() {
  const std::string count = std::to_string(kDevicesPerNode);
  return {{"status",
           {{"capacity", {{kClassResourceName, count}}},
            {"allocatable", {{kClassResourceName, count}}}}}};
}

std::string k80Selector() {
  return std::string("device.attributes[\"") + kDriver + "\"].type == \"k80\"";
}

json resourceClaim(const std::string& ns, const std::string& name) {
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceClaim"},
          {"metadata", {{"name", name}, {"namespace", ns}}},
          {"spec",
           {{"devices",
             {{"requests",
               {{{"name", "gpu"},
                 {"exactly",
                  {{"deviceClassName", kDriver},
                   {"allocationMode", "ExactCount"},
                   {"count", 1},
                   {"selectors", {{{"cel", {{"expression", k80Selector()}}}}}}}}}}}}}}}};
}

json claimTemplate(const std::string& ns, const std::string& name) {
  return {{"apiVersion", "extendedresource.io/v1alpha1"},
          {"kind", "ExtendedResourceClaimTemplate"},
          {"metadata", {{"name", name}, {"namespace", ns}}},
          {"spec", {{"spec", claim(ns, name, 1, "k80")["spec"]}}}};
}

json pod(Variant v, const std::string& ns, const std::string& name, const std::string& claim) {
  json container = {{"name", "trainer"},
                    {"image", "ghcr.io/example/trainer:v1.3"},
                    {"resources",
                     {{"requests", {{"cpu", "100m"}, {"memory", "128Mi"}}},
                      {"limits", {{"cpu", "100m"}, {"memory", "128Mi"}}}}}};
  json p = {{"apiVersion", "v1"},
            {"kind", "Pod"},
            {"metadata", {{"name", name}, {"namespace", ns}, {"labels", {{"app", "trainer"}}}}},
            {"spec",
             {{"schedulerName", "default-scheduler"},
              {"terminationGracePeriodSeconds", 0},
              {"containers", json::array()}}}};
  switch (v) {
    case Variant::kExtender:
      p["spec"]["schedulerName"] = "extended-resource-scheduler";
      p["metadata"]["annotations"] = {{"extendedresource.io/claims", claim}};
      break;
    case Variant::kDra:
      p["spec"]["resourceClaims"] = {{{"name", "gpu"}, {"resourceClaimName", claim}}};
      container["resources"]["claims"] = {{{"name", "gpu"}}};
      break;
    case Variant::kNoClaims:
      break;
    case Variant::kTemplates:
      p["spec"]["schedulerName"] = "extended-resource-scheduler";
      p["metadata"]["annotations"] = {{"extendedresource.io/claim-templates", "gpu=" + claim}};
      break;
    case Variant::kClasses:
      // No annotation of ours: the controller finds the class by the name asked for.
      p["spec"]["schedulerName"] = "extended-resource-scheduler";
      container["resources"]["limits"][kClassResourceName] = "1";
      break;
    case Variant::kClassesRouted:
      p["spec"].erase("schedulerName");
      container["resources"]["limits"][kClassResourceName] = "1";
      break;
    case Variant::kDraClasses:
      container["resources"]["limits"][kDraClassResourceName] = "1";
      break;
  }
  p["spec"]["containers"].push_back(container);
  return p;
}

json replicaSet(const std::string& ns, const std::string& name, size_t replicas,
                const std::string& templateName) {
  json p = pod(Variant::kTemplates, ns, name, templateName);
  p["metadata"].erase("name");
  p["metadata"].erase("namespace");
  return {{"apiVersion", "apps/v1"},
          {"kind", "ReplicaSet"},
          {"metadata", {{"name", name}, {"namespace", ns}}},
          {"spec",
           {{"replicas", replicas},
            {"selector", {{"matchLabels", p["metadata"]["labels"]}}},
            {"template", {{"metadata", p["metadata"]}, {"spec", p["spec"]}}}}}};
}

}  // namespace ker::bench::pipeline
