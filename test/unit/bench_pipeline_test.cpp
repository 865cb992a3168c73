#include <gtest/gtest.h>

#include "bench/cluster.h"
#include "bench/pipeline_objects.h"
#include "bench/pipeline_summary.h"

namespace ker::bench::pipeline {
namespace {

using ojson = nlohmann::ordered_json;

TEST(PipelineObjectsTest, SliceHoldsTheNodesEightDevicesFourOfThemK80s) {
  const auto slice = resourceSlice(7);
  EXPECT_EQ(slice["apiVersion"], "resource.k8s.io/v1");
  EXPECT_EQ(slice["spec"]["nodeName"], "node-00007");
  EXPECT_EQ(slice["spec"]["pool"]["name"], "node-00007");
  ASSERT_EQ(slice["spec"]["devices"].size(), 8u);
  int k80 = 0;
  for (const auto& d : slice["spec"]["devices"]) {
    k80 += d["attributes"]["type"]["string"] == "k80" ? 1 : 0;
  }
  EXPECT_EQ(k80, kK80PerNode);
}

TEST(PipelineObjectsTest, ExtendedResourcesMatchTheSliceOnEveryNode) {
  // Unlike bench::device, the tenth node is no exception.
  for (int d = 0; d < 8; ++d) {
    const auto er = extendedResource(9, d);
    const auto slice = resourceSlice(9);
    EXPECT_EQ(er["spec"]["properties"]["type"],
              slice["spec"]["devices"][d]["attributes"]["type"]["string"]);
  }
}

TEST(PipelineObjectsTest, PodsDifferOnlyInTheirDeviceRequest) {
  const auto ext = pod(Variant::kExtender, "ns", "p-00001", "c-00001");
  const auto dra = pod(Variant::kDra, "ns", "p-00001", "c-00001");
  const auto none = pod(Variant::kNoClaims, "ns", "p-00001", "c-00001");
  EXPECT_EQ(ext["spec"]["schedulerName"], "extended-resource-scheduler");
  EXPECT_EQ(ext["metadata"]["annotations"]["extendedresource.io/claims"], "c-00001");
  EXPECT_EQ(dra["spec"]["schedulerName"], "default-scheduler");
  EXPECT_EQ(dra["spec"]["resourceClaims"][0]["resourceClaimName"], "c-00001");
  EXPECT_EQ(dra["spec"]["containers"][0]["resources"]["claims"][0]["name"], "gpu");
  EXPECT_FALSE(none["spec"].contains("resourceClaims"));
  EXPECT_EQ(none["spec"]["containers"][0]["resources"]["requests"],
            ext["spec"]["containers"][0]["resources"]["requests"]);
}

TEST(PipelineObjectsTest, ClaimSelectsOneK80OfTheClass) {
  const auto c = resourceClaim("ns", "c-00001");
  const auto& req = c["spec"]["devices"]["requests"][0]["exactly"];
  EXPECT_EQ(req["deviceClassName"], kDriver);
  EXPECT_EQ(req["count"], 1);
  EXPECT_EQ(req["selectors"][0]["cel"]["expression"],
            "device.attributes[\"gpu.example.com\"].type == \"k80\"");
  EXPECT_EQ(parseVariant("dra"), Variant::kDra);
  EXPECT_THROW(parseVariant("nope"), std::invalid_argument);
}

TEST(PipelineObjectsTest, AReplicaSetsPodsNameTheTemplateForTheExtendersProfile) {
  EXPECT_EQ(parseVariant("templates"), Variant::kTemplates);
  EXPECT_STREQ(variantName(Variant::kTemplates), "templates");
  const auto rs = replicaSet("ns", "trainer", 200, "k80");
  EXPECT_EQ(rs["kind"], "ReplicaSet");
  EXPECT_EQ(rs["spec"]["replicas"], 200);
  const auto& tmpl = rs["spec"]["template"];
  EXPECT_EQ(rs["spec"]["selector"]["matchLabels"], tmpl["metadata"]["labels"]);
  EXPECT_FALSE(tmpl["metadata"].contains("name"));
  EXPECT_EQ(tmpl["metadata"]["annotations"]["extendedresource.io/claim-templates"], "gpu=k80");
  EXPECT_FALSE(tmpl["metadata"]["annotations"].contains("extendedresource.io/claims"));
  EXPECT_EQ(tmpl["spec"], pod(Variant::kTemplates, "ns", "x", "k80")["spec"]);
  EXPECT_EQ(tmpl["spec"]["schedulerName"], "extended-resource-scheduler");

  const auto t = claimTemplate("ns", "k80");
  EXPECT_EQ(t["kind"], "ExtendedResourceClaimTemplate");
  EXPECT_EQ(t["spec"]["spec"]["extendedResourceNum"], 1);
  EXPECT_EQ(t["spec"]["spec"]["metadataRequirements"]["matchLabels"]["type"], "k80");
}

TEST(PipelineObjectsTest, EveryVariantParsesFromItsName) {
  for (Variant v : kVariants) {
    EXPECT_EQ(parseVariant(variantName(v)), v) << variantName(v);
  }
  EXPECT_EQ(parseVariant("classes"), Variant::kClasses);
  EXPECT_EQ(parseVariant("dra-classes"), Variant::kDraClasses);
  EXPECT_TRUE(usesDraClaims(Variant::kDraClasses));
  EXPECT_TRUE(usesDraClaims(Variant::kDra));
  EXPECT_FALSE(usesDraClaims(Variant::kClasses));
}

TEST(PipelineObjectsTest, ClassPodsAskInTheirLimitsWithoutClaimsOrAnnotations) {
  const auto cls = pod(Variant::kClasses, "ns", "p-00001", "c-00001");
  const auto mapped = pod(Variant::kDraClasses, "ns", "p-00001", "c-00001");
  const auto none = pod(Variant::kNoClaims, "ns", "p-00001", "c-00001");
  EXPECT_EQ(cls["spec"]["schedulerName"], "extended-resource-scheduler");
  EXPECT_EQ(mapped["spec"]["schedulerName"], "default-scheduler");
  for (const auto* p : {&cls, &mapped}) {
    EXPECT_FALSE((*p)["metadata"].contains("annotations")) << p->dump();
    EXPECT_FALSE((*p)["spec"].contains("resourceClaims")) << p->dump();
    const auto& resources = (*p)["spec"]["containers"][0]["resources"];
    EXPECT_FALSE(resources.contains("claims"));
    EXPECT_EQ(resources["requests"], none["spec"]["containers"][0]["resources"]["requests"]);
  }
  const auto& clsLimits = cls["spec"]["containers"][0]["resources"]["limits"];
  const auto& mappedLimits = mapped["spec"]["containers"][0]["resources"]["limits"];
  EXPECT_EQ(clsLimits[kClassResourceName], "1");
  EXPECT_FALSE(clsLimits.contains(kDraClassResourceName));
  EXPECT_EQ(mappedLimits[kDraClassResourceName], "1");
  EXPECT_FALSE(mappedLimits.contains(kClassResourceName));
}

TEST(PipelineObjectsTest, RoutedClassPodsAreTheClassPodsNamingNoScheduler) {
  auto routed = pod(Variant::kClassesRouted, "ns", "p-00001", "c-00001");
  EXPECT_FALSE(routed["spec"].contains("schedulerName")) << routed.dump();
  routed["spec"]["schedulerName"] = "extended-resource-scheduler";
  EXPECT_EQ(routed, pod(Variant::kClasses, "ns", "p-00001", "c-00001"));
  EXPECT_TRUE(claimsMadePerPod(Variant::kClassesRouted));
  EXPECT_FALSE(usesDraClaims(Variant::kClassesRouted));
  EXPECT_FALSE(claimsMadePerPod(Variant::kTemplates));
}

TEST(PipelineObjectsTest, TheClassesServeEveryDeviceUnderNamesOfTheirOwn) {
  const auto cls = extendedResourceClass();
  EXPECT_EQ(cls["kind"], "ExtendedResourceClass");
  EXPECT_EQ(cls["metadata"]["name"], kClassName);
  EXPECT_EQ(cls["spec"]["extendedResourceName"], kClassResourceName);
  EXPECT_EQ(cls["spec"]["rawResourceName"], extendedResource(0, 0)["spec"]["rawResourceName"]);
  EXPECT_FALSE(cls["spec"].contains("metadataRequirements"));

  const auto mapped = mappedDeviceClass();
  EXPECT_EQ(mapped["kind"], "DeviceClass");
  EXPECT_EQ(mapped["metadata"]["name"], kMappedDeviceClass);
  EXPECT_NE(mapped["metadata"]["name"], deviceClass()["metadata"]["name"]);
  EXPECT_EQ(mapped["spec"]["extendedResourceName"], kDraClassResourceName);
  EXPECT_EQ(mapped["spec"]["selectors"], deviceClass()["spec"]["selectors"]);
  EXPECT_FALSE(deviceClass()["spec"].contains("extendedResourceName"));
  EXPECT_NE(std::string(kClassResourceName), kDraClassResourceName);
}

// kube-scheduler's resource fit needs the class's name on the node, and DRA serves its own
// mapped name only where the node does not advertise it.
TEST(PipelineObjectsTest, NodesAdvertiseTheClassNameOnlyOnePerDevice) {
  const auto n = nodeObject(3);
  const auto plain = kubeletNode(3);
  for (const char* field : {"capacity", "allocatable"}) {
    const auto& r = n["status"][field];
    EXPECT_EQ(r[kClassResourceName], std::to_string(kDevicesPerNode)) << field;
    EXPECT_FALSE(r.contains(kDraClassResourceName)) << field;
    auto without = r;
    without.erase(kClassResourceName);
    EXPECT_EQ(without, plain["status"][field]) << field;
  }
  EXPECT_EQ(n["metadata"], plain["metadata"]);
  const auto patch = classCapacityPatch();
  EXPECT_EQ(patch["status"]["capacity"], patch["status"]["allocatable"]);
  auto patched = plain;
  patched.merge_patch(patch);
  EXPECT_EQ(patched, n);
}

ojson run(const std::string& variant, double rate, double p99, double failed,
          const std::string& qps = "1000") {
  return {{"variant", variant},
          {"nodes", 500},
          {"pods", 500},
          {"client_qps", qps},
          {"pods_per_second", rate},
          {"p50_ms", p99 / 2},
          {"p99_ms", p99},
          {"failed_binds_per_pod", failed},
          {"timed_out", false},
          {"cpu_ms_per_pod", {{"kube-apiserver", rate / 10}}}};
}

TEST(PipelineSummaryTest, MediansPerGroupInFirstSeenOrder) {
  const ojson s = summarize({run("extender", 10, 900, 0.5), run("dra", 80, 300, 0),
                             run("extender", 30, 700, 0.2), run("extender", 20, 800, 0.1),
                             run("extender", 5, 100, 0, "default")});
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0]["variant"], "extender");
  EXPECT_EQ(s[0]["runs"], 3u);
  EXPECT_EQ(s[0]["pods_per_second"], 20.0);
  EXPECT_EQ(s[0]["p99_ms"], 800.0);
  EXPECT_EQ(s[0]["failed_binds_per_pod"], 0.2);
  EXPECT_EQ(s[0]["cpu_ms_per_pod"]["kube-apiserver"], 2.0);
  EXPECT_EQ(s[0]["pods_per_second_runs"].size(), 3u);
  EXPECT_EQ(s[1]["variant"], "dra");
  EXPECT_EQ(s[2]["client_qps"], "default");
}

TEST(PipelineSummaryTest, TakesTheExtenderBindTimeFromItsCallsWhenThere) {
  ojson a = run("extender", 10, 900, 0);
  ojson b = run("extender", 10, 900, 0);
  ojson c = run("extender", 10, 900, 0);
  a["extender_calls"] = {{"bind", {{"calls", 500}, {"ms_mean", 300.0}}}};
  b["extender_calls"] = {{"bind", {{"calls", 500}, {"ms_mean", 100.0}}}};
  c["extender_calls"] = {{"bind", {{"calls", 500}, {"ms_mean", 200.0}}}};
  a["create_seconds"] = 3.0;
  b["create_seconds"] = 1.0;
  c["create_seconds"] = 2.0;
  const ojson s = summarize({a, b, c, run("dra", 80, 300, 0)});
  EXPECT_EQ(s[0]["extender_bind_ms_mean"], 200.0);
  EXPECT_EQ(s[0]["create_seconds"], 2.0);
  EXPECT_FALSE(s[1].contains("extender_bind_ms_mean"));
  EXPECT_NE(markdown(s, judge(s), {}).find("(200)"), std::string::npos);
}

ojson withApiserverMs(ojson run, double ms) {
  run["cpu_ms_per_pod"]["kube-apiserver"] = ms;
  return run;
}

TEST(PipelineSummaryTest, JudgesTheFiveTargetsWithMargins) {
  const ojson s =
      summarize({withApiserverMs(run("extender", 70, 140, 0.005), 4),
                 withApiserverMs(run("dra", 50, 300, 0), 5), run("no-claims", 100, 50, 0)});
  const ojson v = judge(s);
  ASSERT_EQ(v.size(), 1u);
  const auto& verdicts = v[0]["verdicts"];
  ASSERT_EQ(verdicts.size(), 5u);
  for (const auto& x : verdicts) {
    EXPECT_TRUE(x["met"].get<bool>()) << x.dump();
  }
  EXPECT_EQ(verdicts[0]["target"], "pods/s >= 1.3x DRA's");
  EXPECT_EQ(verdicts[0]["margin"], "+8% against 65.000 pods/s");
  EXPECT_EQ(verdicts[1]["margin"], "-7% against 150.000 ms");
  EXPECT_EQ(verdicts[2]["target"], "kube-apiserver CPU / pod <= DRA's");
  EXPECT_EQ(verdicts[2]["margin"], "-20% against 5.000 ms");

  const ojson miss =
      judge(summarize({withApiserverMs(run("extender", 60, 160, 0.01), 6),
                       withApiserverMs(run("dra", 50, 300, 0), 5), run("no-claims", 130, 50, 0)}));
  for (const auto& x : miss[0]["verdicts"]) {
    EXPECT_FALSE(x["met"].get<bool>()) << x.dump();
  }
  const std::string md = markdown(s, v, {{"note", "shared machine"}});
  EXPECT_NE(md.find("PASS pods/s >= 1.3x DRA's"), std::string::npos);
  EXPECT_NE(md.find("shared machine"), std::string::npos);
}

TEST(PipelineSummaryTest, RunsOfOtherCreatingClientsAreGroupedAndJudgedApart) {
  auto fiveClients = [](ojson r) {
    r["creating_clients"] = 5;
    return r;
  };
  const ojson s =
      summarize({run("extender", 70, 140, 0), run("dra", 50, 300, 0),
                 fiveClients(run("extender", 45, 500, 0)), fiveClients(run("dra", 45, 4000, 0))});
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s[0]["creating_clients"], 16);
  EXPECT_EQ(s[2]["creating_clients"], 5);
  const ojson v = judge(s);
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[1]["creating_clients"], 5);
  EXPECT_EQ(v[1]["verdicts"][0]["margin"], "-23% against 58.500 pods/s");
  EXPECT_NE(markdown(s, v, {}).find("client QPS 1000, 5 creating clients, extender"),
            std::string::npos);
}

TEST(PipelineSummaryTest, JudgesTheClassPathAgainstDrasMappingAndTheExtender) {
  const ojson s = summarize({run("extender", 100, 200, 0), run("classes", 88, 250, 0),
                             run("dra-classes", 80, 300, 0), run("dra", 50, 300, 0)});
  const ojson v = judge(s);
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0]["variant"], "extender");
  EXPECT_EQ(v[1]["variant"], "classes");
  const auto& verdicts = v[1]["verdicts"];
  ASSERT_EQ(verdicts.size(), 3u);
  EXPECT_EQ(verdicts[0]["target"], "pods/s >= dra-classes'");
  EXPECT_EQ(verdicts[1]["target"], "p99 <= dra-classes'");
  EXPECT_EQ(verdicts[2]["target"], "pods/s >= 0.85x extender's");
  for (const auto& x : verdicts) {
    EXPECT_TRUE(x["met"].get<bool>()) << x.dump();
  }
  EXPECT_EQ(verdicts[0]["margin"], "+10% against 80.000 pods/s");
  EXPECT_EQ(verdicts[1]["margin"], "-17% against 300.000 ms");
  EXPECT_EQ(verdicts[2]["margin"], "+4% against 85.000 pods/s");
  const std::string md = markdown(s, v, {});
  EXPECT_NE(md.find("16 creating clients, classes: PASS pods/s >= dra-classes' (88.000"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("16 creating clients, extender: PASS pods/s >= 1.3x DRA's"), std::string::npos)
      << md;

  // Slower than DRA's mapping, a later p99, and below 0.85x the extender (exactly 85 passes).
  const ojson miss = judge(summarize(
      {run("extender", 100, 200, 0), run("classes", 84, 350, 0), run("dra-classes", 85, 300, 0)}));
  ASSERT_EQ(miss.size(), 2u);
  for (const auto& x : miss[1]["verdicts"]) {
    EXPECT_FALSE(x["met"].get<bool>()) << x.dump();
  }
  EXPECT_TRUE(judge(summarize(
      {run("extender", 100, 200, 0), run("classes", 85, 350, 0)}))[1]["verdicts"][0]["met"]
                  .get<bool>());
}

TEST(PipelineSummaryTest, JudgesOnlyTheClassTargetsWhoseOtherVariantRan) {
  const ojson alone = judge(summarize({run("classes", 90, 250, 0)}));
  EXPECT_TRUE(alone.empty()) << alone.dump();
  const ojson mapped =
      judge(summarize({run("classes", 90, 250, 0), run("dra-classes", 80, 300, 0)}));
  ASSERT_EQ(mapped.size(), 1u);
  EXPECT_EQ(mapped[0]["verdicts"].size(), 2u);
  // Another size's or QPS's figures are not compared.
  const ojson otherQps =
      judge(summarize({run("classes", 90, 250, 0), run("dra-classes", 80, 300, 0, "default")}));
  EXPECT_TRUE(otherQps.empty()) << otherQps.dump();
}

TEST(PipelineSummaryTest, ReportsTheTemplateStagesClaimsInATableOfTheirOwn) {
  ojson a = run("templates", 10, 900, 0);
  ojson b = run("templates", 10, 700, 0);
  ojson c = run("templates", 10, 800, 0);
  a["claims_per_second"] = 40.0;
  b["claims_per_second"] = 20.0;
  c["claims_per_second"] = 30.0;
  a["claim_p50_ms"] = 15.0;
  b["claim_p50_ms"] = 25.0;
  c["claim_p50_ms"] = 35.0;
  a["claim_p99_ms"] = b["claim_p99_ms"] = c["claim_p99_ms"] = 120.0;
  const ojson s = summarize({a, b, c, run("extender", 10, 900, 0)});
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0]["claims_per_second"], 30.0);
  EXPECT_EQ(s[0]["claim_p50_ms"], 25.0);
  EXPECT_EQ(s[0]["p99_ms"], 800.0);
  EXPECT_FALSE(s[1].contains("claims_per_second"));
  const std::string md = markdown(s, judge(s), {});
  const auto table = md.find("## Claims the controller makes");
  ASSERT_NE(table, std::string::npos) << md;
  EXPECT_NE(md.find("| 500 / 500 | 1000 | templates | 30.0 | 25 | 120 | 400 | 800 |", table),
            std::string::npos)
      << md;
  EXPECT_EQ(markdown(summarize({run("extender", 10, 900, 0)}), {}, {}).find("## Claims"),
            std::string::npos);
}

TEST(PipelineSummaryTest, ReportsTheClassVariantsClaimsBesideTheTemplates) {
  ojson t = run("templates", 10, 900, 0);
  ojson c = run("classes", 50, 300, 0);
  t["claims_per_second"] = 20.0;
  c["claims_per_second"] = 60.0;
  c["claim_p50_ms"] = 40.0;
  c["claim_p99_ms"] = 90.0;
  const ojson s = summarize({t, c, run("dra-classes", 40, 400, 0)});
  const std::string md = markdown(s, judge(s), {});
  const auto table = md.find("## Claims the controller makes");
  ASSERT_NE(table, std::string::npos) << md;
  EXPECT_NE(md.find("| 500 / 500 | 1000 | templates | 20.0 |", table), std::string::npos) << md;
  EXPECT_NE(md.find("| 500 / 500 | 1000 | classes | 60.0 | 40 | 90 | 150 | 300 |", table),
            std::string::npos)
      << md;
  EXPECT_EQ(md.find("| dra-classes | ", table), std::string::npos) << md;
}

// bench/plot.py writes the plots beside the markdown, which links them below its main table.
TEST(PipelineSummaryTest, LinksThePlotsBelowTheMainTable) {
  const ojson s = summarize({run("extender", 10, 900, 0)});
  const std::string md = markdown(s, judge(s), {});
  const auto table = md.find("| 500 / 500 |");
  const auto pods = md.find("(pipeline-pods-per-second.svg)");
  ASSERT_NE(table, std::string::npos) << md;
  ASSERT_NE(pods, std::string::npos) << md;
  EXPECT_LT(table, pods);
  EXPECT_NE(md.find("(pipeline-p99.svg)"), std::string::npos) << md;
}

}  // namespace
}  // namespace ker::bench::pipeline
