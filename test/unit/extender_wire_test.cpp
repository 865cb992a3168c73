#include "scheduler/wire/extender_wire.h"

#include <gtest/gtest.h>

#include "testdata.h"

namespace ker {
namespace {

using nlohmann::json;
using testing::readTestdata;

TEST(ParseExtenderArgs, NodeNamesModeAsKubeSchedulerSendsIt) {
  auto args = parseExtenderArgs(readTestdata("filter_nodenames.json"));
  EXPECT_EQ(args.pod.meta.name, "web-0");
  EXPECT_EQ(args.pod.meta.ns, "default");
  EXPECT_EQ(args.pod.meta.uid, "6f1c2d3e-aaaa-bbbb-cccc-000000000001");
  EXPECT_EQ(args.pod.claims, (std::vector<std::string>{"k80-erc"}));
  EXPECT_FALSE(args.hasNodeList);
  EXPECT_EQ(args.nodeNames, (std::vector<std::string_view>{"node-a", "node-b", "node-c"}));
}

TEST(ParseExtenderArgs, NodeListModeKeepsWholeNodes) {
  const std::string body = readTestdata("filter_nodelist.json");
  auto args = parseExtenderArgs(body);
  ASSERT_TRUE(args.hasNodeList);
  EXPECT_EQ(args.nodeNames, (std::vector<std::string_view>{"node-a", "node-b"}));
  ASSERT_EQ(args.nodeObjects.size(), 2u);
  EXPECT_EQ(json::parse(args.nodeObjects[0])["status"]["images"].size(), 1u);
}

TEST(ParseExtenderArgs, KeysMatchCaseInsensitivelyLikeGo) {
  auto args = parseExtenderArgs(
      R"({"pod":{"metadata":{"name":"p","namespace":"ns","uid":"u"}},"nodenames":["a"]})");
  EXPECT_EQ(args.pod.meta.name, "p");
  EXPECT_EQ(args.nodeNames, (std::vector<std::string_view>{"a"}));
  // An exact match wins over a case-insensitive one.
  args = parseExtenderArgs(
      R"({"nodeNames":["wrong"],"Pod":{"metadata":{"name":"p","uid":"u"}},"NodeNames":["right"]})");
  EXPECT_EQ(args.nodeNames, (std::vector<std::string_view>{"right"}));
}

// Names are views into the body unless written with escapes; those are decoded into the
// args, and must stay valid however many there are and after the args move.
TEST(ParseExtenderArgs, EscapedNodeNamesAreDecodedAndOutliveAMove) {
  std::string names;
  std::string items;
  std::vector<std::string> want;
  for (int i = 0; i < 1000; ++i) {
    const std::string n = std::to_string(i);
    names += (i ? "," : "") + (i % 2 ? "\"node-\\u0041" + n + "\"" : "\"node-" + n + "\"");
    items += (i ? "," : "") + std::string(R"({"metadata":{"name":"n\u00e9)") + n + "\"}}";
    want.push_back(i % 2 ? "node-A" + n : "node-" + n);
  }
  const std::string pod = R"("Pod":{"metadata":{"name":"p","uid":"u"}})";
  const std::string namesBody = "{" + pod + ",\"NodeNames\":[" + names + "]}";
  ExtenderArgs parsed = parseExtenderArgs(namesBody);
  const ExtenderArgs args = std::move(parsed);
  ASSERT_EQ(args.nodeNames.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(args.nodeNames[i], want[i]);
  }
  // Unescaped names point into the body itself.
  EXPECT_EQ(args.nodeNames[0].data(), namesBody.data() + namesBody.find("node-0"));

  const std::string listBody = "{" + pod + ",\"Nodes\":{\"items\":[" + items + "]}}";
  ExtenderArgs list = parseExtenderArgs(listBody);
  const ExtenderArgs moved = std::move(list);
  ASSERT_EQ(moved.nodeNames.size(), 1000u);
  for (size_t i = 0; i < moved.nodeNames.size(); ++i) {
    EXPECT_EQ(moved.nodeNames[i], "n\xc3\xa9" + std::to_string(i));
  }
}

TEST(ParseExtenderArgs, NullNodesAndNodeNamesMeanNoCandidates) {
  auto args = parseExtenderArgs(
      R"({"Pod":{"metadata":{"name":"p","uid":"u"}},"Nodes":null,"NodeNames":null})");
  EXPECT_TRUE(args.nodeNames.empty());
  EXPECT_FALSE(args.hasNodeList);
}

TEST(ParseExtenderArgs, BadBodiesGetClearErrors) {
  struct Case {
    std::string body;
    std::string expect;
  } cases[] = {
      {"", "empty request body"},
      {"{\"Pod\":", "malformed JSON"},
      {"[]", "must be a JSON object"},
      {R"({"NodeNames":["a"]})", "Pod is required"},
      {R"({"Pod":null})", "Pod is required"},
      {R"({"Pod":"x"})", "Pod must be an object"},
      {R"({"Pod":{"metadata":{"uid":"u"}}})", "Pod.metadata.name is required"},
      {R"({"Pod":{"metadata":{"name":"p","uid":"u"}},"NodeNames":"a"})",
       "NodeNames must be an array"},
      {R"({"Pod":{"metadata":{"name":"p","uid":"u"}},"NodeNames":[1]})",
       "NodeNames must hold strings"},
      {R"({"Pod":{"metadata":{"name":"p","uid":"u"}},"Nodes":[]})", "Nodes must be a NodeList"},
      {R"({"Pod":{"metadata":{"name":"p","uid":"u"}},"Nodes":{"items":{}}})",
       "Nodes.items must be an array"},
      {R"({"Pod":{"metadata":{"name":"p","uid":"u"}},"Nodes":{"items":[{"metadata":{}}]}})",
       "metadata.name is required"},
      {"{\"Pod\":{\"metadata\":{\"name\":\"\xff\xfe\",\"uid\":\"u\"}}}", "malformed JSON"},
      {std::string(100000, '['), "nested deeper"},
      {R"({"Pod":{"metadata":{"name":"p","uid":"u","annotations":{"a":")" +
           std::string(size_t{3} << 20, 'x') + R"("}}},"NodeNames":["n"]})",
       "exceeds the limit of 3145728 bytes"},
  };
  for (const auto& c : cases) {
    try {
      parseExtenderArgs(c.body);
      ADD_FAILURE() << "accepted: " << c.body.substr(0, 80);
    } catch (const WireError& e) {
      EXPECT_NE(std::string(e.what()).find(c.expect), std::string::npos)
          << "body " << c.body.substr(0, 80) << " gave: " << e.what();
    }
  }
}

// A request names at most 100,000 nodes (the filter answers each with an entry of its own), in
// either form, and so does a preemption's map of victims.
TEST(ParseExtenderArgs, AtMostAHundredThousandNodesAreServed) {
  const auto names = [](size_t n) {
    std::string list;
    for (size_t i = 0; i < n; ++i) {
      list += (i ? ",\"" : "\"") + std::to_string(i) + "\"";
    }
    return list;
  };
  const std::string pod = R"({"Pod":{"metadata":{"name":"p","uid":"u"}},)";
  EXPECT_EQ(parseExtenderArgs(pod + "\"NodeNames\":[" + names(100000) + "]}").nodeNames.size(),
            100000u);
  for (const std::string& body :
       {pod + "\"NodeNames\":[" + names(100001) + "]}", pod + "\"Nodes\":{\"items\":[" + [] {
          std::string items;
          for (size_t i = 0; i <= 100000; ++i) {
            items += (i ? ",{" : "{") + std::string(R"("metadata":{"name":"n)") +
                     std::to_string(i) + "\"}}";
          }
          return items;
        }() + "]}}"}) {
    try {
      parseExtenderArgs(body);
      ADD_FAILURE() << "accepted 100,001 nodes";
    } catch (const WireError& e) {
      EXPECT_STREQ(e.what(), "the request names 100001 nodes; at most 100000 are served");
    }
  }
  std::string victims;
  for (size_t i = 0; i <= 100000; ++i) {
    victims += (i ? ",\"n" : "\"n") + std::to_string(i) + "\":{\"Pods\":[]}";
  }
  try {
    parsePreemptionArgs(pod + "\"NodeNameToMetaVictims\":{" + victims + "}}");
    ADD_FAILURE() << "accepted 100,001 nodes";
  } catch (const WireError& e) {
    EXPECT_STREQ(e.what(), "the request names 100001 nodes; at most 100000 are served");
  }
}

TEST(ParseBindingArgs, FieldsAndErrors) {
  auto b = parseBindingArgs(readTestdata("bind.json"));
  EXPECT_EQ(b.podName, "web-0");
  EXPECT_EQ(b.podNamespace, "default");
  EXPECT_EQ(b.podUid, "6f1c2d3e-aaaa-bbbb-cccc-000000000001");
  EXPECT_EQ(b.node, "node-a");
  b = parseBindingArgs(R"({"podName":"p","podNamespace":"ns","podUID":"u","node":"n"})");
  EXPECT_EQ(b.podNamespace, "ns");
  EXPECT_THROW(parseBindingArgs(R"({"PodName":"p","PodUID":"u"})"), WireError);
  EXPECT_THROW(parseBindingArgs(R"({"PodName":1,"PodUID":"u","Node":"n"})"), WireError);
  EXPECT_THROW(parseBindingArgs("null"), WireError);
}

TEST(ParseBindingArgs, KeysResolveAsGoDecodesThem) {
  // An exact key wins over a case-insensitive one wherever it is; among duplicates of the
  // same key the last wins; unknown members of any shape are skipped.
  auto b = parseBindingArgs(
      R"({"node":"lower","PodName":"p","PodUID":"u","Node":"exact","Extra":{"a":[1,2,{}]}})");
  EXPECT_EQ(b.node, "exact");
  b = parseBindingArgs(R"({"PodName":"p","PodUID":"u","Node":"first","Node":"second"})");
  EXPECT_EQ(b.node, "second");
  b = parseBindingArgs(R"({"PODNAME":"p","poduid":"u","NODE":"n","PodNamespace":null})");
  EXPECT_EQ(b.podName, "p");
  EXPECT_EQ(b.podNamespace, "default");
  EXPECT_THROW(parseBindingArgs(R"({"PodName":"p","PodUID":"u","Node":"n"} x)"), WireError);
}

TEST(RenderFilterReply, NodeNamesMode) {
  const std::string body = readTestdata("filter_nodenames.json");
  auto args = parseExtenderArgs(body);
  FilterReply r;
  r.passing = {"node-a"};
  r.failed = {{"node-b", "claim default/k80-erc: 0 of 1 free nvidia.com/gpu on this node"}};
  r.failedUnresolvable = {{"node-c", "x"}};
  const SplicedBody rendered = renderFilterReply(r, args);
  EXPECT_TRUE(rendered.inserts.empty());
  auto out = json::parse(rendered.text);
  EXPECT_EQ(out["NodeNames"], json::array({"node-a"}));
  EXPECT_TRUE(out["Nodes"].is_null());
  EXPECT_EQ(out["FailedNodes"]["node-b"], r.failed[0].second);
  EXPECT_EQ(out["FailedAndUnresolvableNodes"]["node-c"], "x");
  EXPECT_EQ(out["Error"], "");
}

TEST(RenderFilterReply, NodeListModeReturnsPassingNodesWhole) {
  const std::string body = readTestdata("filter_nodelist.json");
  auto args = parseExtenderArgs(body);
  FilterReply r;
  r.passing = {"node-a"};
  auto out = json::parse(renderFilterReply(r, args).join(body));
  ASSERT_EQ(out["Nodes"]["items"].size(), 1u);
  EXPECT_EQ(out["Nodes"]["items"][0], json::parse(args.nodeObjects[0]));
}

// Names read without escapes are copied into replies as they stood; a request with any
// escaped name has every name escaped as needed. Both read back as the names asked.
TEST(RenderReplies, NodeNamesComeBackAsAsked) {
  const std::string pod = R"("Pod":{"metadata":{"name":"p","uid":"u"}})";
  for (const std::string& names : {std::string("[\"plain\",\"caf\xc3\xa9\",\"\xe2\x82\xac-1\"]"),
                                   std::string(R"(["plain","q\"uote","caf\u00e9"])")}) {
    const std::string body = "{" + pod + ",\"NodeNames\":" + names + "}";
    const auto args = parseExtenderArgs(body);
    const json want = json::parse(names);
    FilterReply r;
    std::vector<std::pair<std::string_view, int>> scores;
    for (const auto name : args.nodeNames) {
      r.passing.push_back(name);
      scores.emplace_back(name, 1);
    }
    EXPECT_EQ(json::parse(renderFilterReply(r, args).join(body))["NodeNames"], want) << names;
    const std::string prio = renderPriorities(scores, args.decodedNames.empty());
    EXPECT_EQ(prio, renderPriorities(scores, false)) << names;
    const json hosts = json::parse(prio);
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(hosts[i]["Host"], want[i]) << names;
    }
  }
}

TEST(RenderPriorities, HostScorePairsAsIntegers) {
  auto out = json::parse(renderPriorities({{"a", 10}, {"b", 0}}));
  ASSERT_TRUE(out.is_array());
  EXPECT_EQ(out[0]["Host"], "a");
  EXPECT_TRUE(out[0]["Score"].is_number_integer());
  EXPECT_EQ(out[0]["Score"], 10);
}

}  // namespace
}  // namespace ker
