// The one-pass reader and the direct renderers of extender_wire: same decisions and same
// bytes as decoding and encoding through nlohmann::json documents.
#include <gtest/gtest.h>

#include <limits>

#include "scheduler/wire/extender_wire.h"
#include "testdata.h"

namespace ker {
namespace {

using nlohmann::json;
using testing::readTestdata;

const char* const kPod = R"({"metadata":{"name":"p","namespace":"ns","uid":"u"}})";

// Node objects as Go writes them: struct field order, \u003c escapes, nothing sorted.
const std::string kNodeA =
    R"({"metadata":{"name":"node-a","labels":{"zone":"z1"}},"spec":{},"status":{"conditions":)"
    R"([{"type":"Ready","status":"True","message":"ready \u003cok\u003e"}],"capacity":{"cpu":"8"}}})";
const std::string kNodeB =
    R"({"metadata":{"name":"node-b"},"status":{"allocatable":{"pods":"1e2"}}})";

std::string nodeListBody() {
  return std::string(R"({"Pod":)") + kPod + R"(,"Nodes":{"metadata":{},"items":[)" + kNodeA + "," +
         kNodeB + R"(]},"NodeNames":null})";
}

TEST(ExtenderWireFastPath, NodeListReplySplicesTheNodesOriginalBytes) {
  const std::string body = nodeListBody();
  const auto args = parseExtenderArgs(body);
  ASSERT_EQ(args.nodeNames, (std::vector<std::string_view>{"node-a", "node-b"}));
  EXPECT_EQ(args.nodeObjects[0], kNodeA);
  EXPECT_EQ(args.nodeObjects[1], kNodeB);
  EXPECT_EQ(args.nodeLabels(0), (std::map<std::string, std::string>{{"zone", "z1"}}));
  EXPECT_TRUE(args.nodeLabels(1).empty());
  FilterReply r;
  r.passing = {"node-b", "node-a"};
  const SplicedBody rendered = renderFilterReply(r, args);
  // The Node objects are the request's own bytes, not copies.
  ASSERT_EQ(rendered.inserts.size(), 2u);
  EXPECT_EQ(body.substr(rendered.inserts[0].offset, rendered.inserts[0].length), kNodeB);
  EXPECT_EQ(body.substr(rendered.inserts[1].offset, rendered.inserts[1].length), kNodeA);
  const std::string out = rendered.join(body);
  EXPECT_NE(out.find(R"("items":[)" + kNodeB + "," + kNodeA + "]"), std::string::npos) << out;
  const auto decoded = json::parse(out);
  EXPECT_EQ(decoded["Nodes"]["metadata"], json::object());
  EXPECT_EQ(decoded["NodeNames"], json::array({"node-b", "node-a"}));
}

// Passing Nodes that follow each other in the request go out as one slice, the request's own
// separator between them included.
TEST(ExtenderWireFastPath, NodeListReplyJoinsConsecutiveNodesIntoOneSlice) {
  const std::string kNodeC = R"({"metadata":{"name":"node-c"}})";
  const std::string body = std::string(R"({"Pod":)") + kPod + R"(,"Nodes":{"items":[ )" + kNodeA +
                           " ,\n " + kNodeB + "," + kNodeC + R"(]},"NodeNames":null})";
  const auto args = parseExtenderArgs(body);
  FilterReply r;
  r.passing = {"node-a", "node-b", "node-c"};
  SplicedBody rendered = renderFilterReply(r, args);
  ASSERT_EQ(rendered.inserts.size(), 1u);
  EXPECT_EQ(body.substr(rendered.inserts[0].offset, rendered.inserts[0].length),
            kNodeA + " ,\n " + kNodeB + "," + kNodeC);
  auto items = json::parse(rendered.join(body))["Nodes"]["items"];
  EXPECT_EQ(items, json::array({json::parse(kNodeA), json::parse(kNodeB), json::parse(kNodeC)}));

  // A gap, or a step back, starts a new slice.
  r.passing = {"node-a", "node-c", "node-b"};
  rendered = renderFilterReply(r, args);
  ASSERT_EQ(rendered.inserts.size(), 3u);
  items = json::parse(rendered.join(body))["Nodes"]["items"];
  EXPECT_EQ(items, json::array({json::parse(kNodeA), json::parse(kNodeC), json::parse(kNodeB)}));
  r.passing = {"node-b", "node-c"};
  rendered = renderFilterReply(r, args);
  ASSERT_EQ(rendered.inserts.size(), 1u);
  EXPECT_EQ(body.substr(rendered.inserts[0].offset, rendered.inserts[0].length),
            kNodeB + "," + kNodeC);
}

TEST(ExtenderWireFastPath, NodeListReplyLeavesOutFailedNodes) {
  const std::string body = nodeListBody();
  const auto args = parseExtenderArgs(body);
  FilterReply r;
  r.passing = {"node-a"};
  r.failed = {{"node-b", "no"}};
  const auto decoded = json::parse(renderFilterReply(r, args).join(body));
  ASSERT_EQ(decoded["Nodes"]["items"].size(), 1u);
  EXPECT_EQ(decoded["Nodes"]["items"][0], json::parse(kNodeA));
  EXPECT_EQ(decoded["FailedNodes"]["node-b"], "no");
}

// What the replies were when they were nlohmann documents: the renderers keep those bytes.
TEST(ExtenderWireFastPath, RepliesAreByteForByteTheDocumentRendering) {
  const std::string body = readTestdata("filter_nodenames.json");
  const auto args = parseExtenderArgs(body);
  FilterReply r;
  r.passing = {"node-a", "node-\xc3\xa9"};
  r.failed = {{"node-b", "claim default/k80-erc: 0 of 1 free \"nvidia.com/gpu\"\n\t<here>"}};
  r.failedUnresolvable = {{"node-c", std::string("ctl\x01", 4)}};
  json doc = json::object();
  doc["FailedNodes"] = {{r.failed[0].first, r.failed[0].second}};
  doc["FailedAndUnresolvableNodes"] = {
      {r.failedUnresolvable[0].first, r.failedUnresolvable[0].second}};
  doc["Error"] = r.error;
  doc["NodeNames"] = r.passing;
  doc["Nodes"] = nullptr;
  EXPECT_EQ(renderFilterReply(r, args).join(body), doc.dump());
  EXPECT_EQ(
      renderFilterReply(FilterReply{}, args).join(body),
      R"({"Error":"","FailedAndUnresolvableNodes":{},"FailedNodes":{},"NodeNames":[],"Nodes":null})");

  const std::vector<std::pair<std::string_view, int>> scores = {{"a", 10}, {"b\"", 0}, {"c", -1}};
  json prio = json::array();
  for (const auto& [host, score] : scores) {
    prio.push_back({{"Host", host}, {"Score", score}});
  }
  EXPECT_EQ(renderPriorities(scores), prio.dump());
  EXPECT_EQ(renderPriorities({}), "[]");
  EXPECT_EQ(renderBindingReply("x \"y\""), json({{"Error", "x \"y\""}}).dump());
  EXPECT_EQ(renderError("e"),
            json({{"Error", "e"}, {"NodeNames", nullptr}, {"Nodes", nullptr}}).dump());
}

// Verbatim names are written into a reply sized beforehand: the widest scores and long
// names must still come out whole and as a document would have them.
TEST(ExtenderWireFastPath, VerbatimRepliesMatchADocumentAtTheirLimits) {
  const std::string longName(300, 'n');
  const std::vector<std::pair<std::string_view, int>> scores = {
      {"a", std::numeric_limits<int>::min()},
      {longName, std::numeric_limits<int>::max()},
      {"", 0},
      {"node-3", -7}};
  json prio = json::array();
  for (const auto& [host, score] : scores) {
    prio.push_back({{"Host", host}, {"Score", score}});
  }
  EXPECT_EQ(renderPriorities(scores, true), prio.dump());
  EXPECT_EQ(renderPriorities({}, true), "[]");

  const std::string body =
      std::string(R"({"Pod":)") + kPod + R"(,"NodeNames":["a",")" + longName + R"(","","node-3"]})";
  const auto args = parseExtenderArgs(body);
  ASSERT_TRUE(args.decodedNames.empty());
  FilterReply r;
  r.passing = args.nodeNames;
  EXPECT_EQ(json::parse(renderFilterReply(r, args).join(body))["NodeNames"],
            json({"a", longName, "", "node-3"}));
  r.passing.clear();
  EXPECT_EQ(json::parse(renderFilterReply(r, args).join(body))["NodeNames"], json::array());
}

TEST(ExtenderWireFastPath, FieldsResolveAsInADecodedDocument) {
  const std::string pod = std::string(R"("Pod":)") + kPod;
  // The exact key wins wherever it is; of duplicates, the last.
  auto args =
      parseExtenderArgs("{" + pod + R"(,"NodeNames":["x"],"nodenames":["y"],"NodeNames":["z"]})");
  EXPECT_EQ(args.nodeNames, (std::vector<std::string_view>{"z"}));
  // Without an exact key, the first in byte order: "NODENAMES" sorts before "nodeNames".
  args = parseExtenderArgs("{" + pod + R"(,"nodeNames":["lower"],"NODENAMES":["upper"]})");
  EXPECT_EQ(args.nodeNames, (std::vector<std::string_view>{"upper"}));
  // Keys are compared decoded.
  args = parseExtenderArgs(R"({"\u0050od":)" + std::string(kPod) + R"(,"Node\u004eames":["n"]})");
  EXPECT_EQ(args.pod.meta.name, "p");
  EXPECT_EQ(args.nodeNames, (std::vector<std::string_view>{"n"}));
  // NodeNames wins over Nodes; a null NodeNames falls back to Nodes.
  args = parseExtenderArgs("{" + pod + R"(,"Nodes":{"items":[]},"NodeNames":["n"]})");
  EXPECT_FALSE(args.hasNodeList);
  args = parseExtenderArgs("{" + pod + R"(,"NodeNames":null,"nodes":{"ITEMS":[)" + kNodeB + "]}}");
  EXPECT_TRUE(args.hasNodeList);
  EXPECT_EQ(args.nodeNames, (std::vector<std::string_view>{"node-b"}));
}

TEST(ExtenderWireFastPath, MalformedJsonAnywhereIsReportedBeforeShapeErrors) {
  const std::string pod = std::string(R"("Pod":)") + kPod;
  for (const std::string& body : {"{" + pod + R"(,"NodeNames":[1],"x":tru})",
                                  "{" + pod + R"(,"Nodes":{"items":[7]}} trailing)",
                                  std::string("[1,2"), "{" + pod + R"(,"Other":"\q"})"}) {
    try {
      parseExtenderArgs(body);
      ADD_FAILURE() << "accepted: " << body;
    } catch (const WireError& e) {
      EXPECT_NE(std::string(e.what()).find("malformed JSON"), std::string::npos)
          << body << " gave: " << e.what();
    }
  }
}

TEST(ExtenderWireFastPath, NodeListReadsNamesAndLabelsAsNodeFromJsonDoes) {
  auto body = [](const std::string& items) {
    return std::string(R"({"Pod":)") + kPod + R"(,"Nodes":{"items":[)" + items + "]}}";
  };
  // A later duplicate wins; labels that are not all strings read as none; other members of
  // metadata and of the node are skipped whatever they hold.
  const std::string text = body(
      R"({"kind":"Node","metadata":{"name":"old","labels":{"a":"1"},"name":"n1","uid":"u"}},)"
      R"({"metadata":{"labels":{"a":"1","b":2},"name":"n2"}},)"
      R"({"metadata":{"labels":null,"name":"n3","annotations":{"x":[1,{"y":null}]}}},)"
      R"({"status":{"metadata":{"name":"decoy"}},"metadata":{"labels":{"z":"\u00e9"},"name":"n4"}})");
  const auto args = parseExtenderArgs(text);
  EXPECT_EQ(args.nodeNames, (std::vector<std::string_view>{"n1", "n2", "n3", "n4"}));
  EXPECT_EQ(args.nodeLabels(0), (std::map<std::string, std::string>{{"a", "1"}}));
  EXPECT_TRUE(args.nodeLabels(1).empty());
  EXPECT_TRUE(args.nodeLabels(2).empty());
  EXPECT_EQ(args.nodeLabels(3), (std::map<std::string, std::string>{{"z", "\xc3\xa9"}}));
  for (size_t i = 0; i < args.nodeNames.size(); ++i) {
    EXPECT_EQ(Node::fromJson(json::parse(args.nodeObjects[i])).meta.labels, args.nodeLabels(i))
        << i;
  }
  for (const char* bad : {R"({"metadata":{"name":7}})", R"({"metadata":"n1"})", R"({})"}) {
    EXPECT_THROW(parseExtenderArgs(body(bad)), WireError) << bad;
  }
}

}  // namespace
}  // namespace ker
