#include "scheduler/extender_wire.h"

#include <algorithm>
#include <cctype>
#include <unordered_map>

namespace ker {

namespace {

using json = nlohmann::json;

bool equalsFold(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// Go's encoding/json: an exact key wins, else the first case-insensitive match.
const json* field(const json& obj, std::string_view name) {
  auto exact = obj.find(std::string(name));
  if (exact != obj.end()) {
    return &*exact;
  }
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (equalsFold(it.key(), name)) {
      return &*it;
    }
  }
  return nullptr;
}

std::string stringField(const json& obj, std::string_view name, bool required) {
  const json* v = field(obj, name);
  if (v == nullptr || v->is_null()) {
    if (required) {
      throw WireError(std::string(name) + " is required");
    }
    return {};
  }
  if (!v->is_string()) {
    throw WireError(std::string(name) + " must be a string, got " + v->type_name());
  }
  return v->get<std::string>();
}

}  // namespace

nlohmann::json parseJsonBounded(std::string_view body, int maxDepth) {
  if (body.empty()) {
    throw WireError("empty request body");
  }
  try {
    return json::parse(body.begin(), body.end(),
                       [maxDepth](int depth, json::parse_event_t, json&) {
                         if (depth > maxDepth) {
                           throw WireError("JSON nested deeper than " +
                                           std::to_string(maxDepth) + " levels");
                         }
                         return true;
                       });
  } catch (const json::exception& e) {
    throw WireError(std::string("malformed JSON: ") + e.what());
  }
}

ExtenderArgs parseExtenderArgs(std::string_view body) {
  json doc = parseJsonBounded(body);
  if (!doc.is_object()) {
    throw WireError(std::string("ExtenderArgs must be a JSON object, got ") + doc.type_name());
  }
  ExtenderArgs args;
  const json* pod = field(doc, "Pod");
  if (pod == nullptr || pod->is_null()) {
    throw WireError("Pod is required");
  }
  if (!pod->is_object()) {
    throw WireError(std::string("Pod must be an object, got ") + pod->type_name());
  }
  args.pod = Pod::fromJson(*pod);
  if (args.pod.meta.name.empty() || args.pod.meta.uid.empty()) {
    throw WireError("Pod.metadata.name and Pod.metadata.uid are required");
  }

  const json* nodeNames = field(doc, "NodeNames");
  const json* nodes = field(doc, "Nodes");
  if (nodeNames != nullptr && !nodeNames->is_null()) {
    if (!nodeNames->is_array()) {
      throw WireError(std::string("NodeNames must be an array, got ") + nodeNames->type_name());
    }
    args.nodeNames.reserve(nodeNames->size());
    for (const auto& n : *nodeNames) {
      if (!n.is_string()) {
        throw WireError("NodeNames must hold strings");
      }
      args.nodeNames.push_back(n.get<std::string>());
    }
  } else if (nodes != nullptr && !nodes->is_null()) {
    if (!nodes->is_object()) {
      throw WireError(std::string("Nodes must be a NodeList object, got ") + nodes->type_name());
    }
    args.hasNodeList = true;
    const json* items = field(*nodes, "items");
    if (items != nullptr && !items->is_null()) {
      if (!items->is_array()) {
        throw WireError("Nodes.items must be an array");
      }
      args.nodeItems.reserve(items->size());
      for (const auto& item : *items) {
        if (!item.is_object()) {
          throw WireError("Nodes.items must hold Node objects");
        }
        Node node = Node::fromJson(item);
        if (node.meta.name.empty()) {
          throw WireError("Nodes.items[].metadata.name is required");
        }
        args.nodeNames.push_back(node.meta.name);
        args.nodeItems.push_back(item);
      }
    }
  }
  return args;
}

BindingArgs parseBindingArgs(std::string_view body) {
  json doc = parseJsonBounded(body);
  if (!doc.is_object()) {
    throw WireError(std::string("ExtenderBindingArgs must be a JSON object, got ") +
                    doc.type_name());
  }
  BindingArgs args;
  args.podName = stringField(doc, "PodName", true);
  args.podNamespace = stringField(doc, "PodNamespace", false);
  if (args.podNamespace.empty()) {
    args.podNamespace = "default";
  }
  args.podUid = stringField(doc, "PodUID", true);
  args.node = stringField(doc, "Node", true);
  if (args.podName.empty() || args.podUid.empty() || args.node.empty()) {
    throw WireError("PodName, PodUID and Node must not be empty");
  }
  return args;
}

std::string renderFilterReply(const FilterReply& reply, const ExtenderArgs& args) {
  json out = json::object();
  out["FailedNodes"] = reply.failed;
  out["FailedAndUnresolvableNodes"] = reply.failedUnresolvable;
  out["Error"] = reply.error;
  out["NodeNames"] = reply.passing;
  if (args.hasNodeList) {
    std::unordered_map<std::string_view, const json*> byName;
    for (size_t i = 0; i < args.nodeItems.size(); ++i) {
      byName.emplace(args.nodeNames[i], &args.nodeItems[i]);
    }
    json items = json::array();
    for (const auto& name : reply.passing) {
      if (auto it = byName.find(name); it != byName.end()) {
        items.push_back(*it->second);
      }
    }
    out["Nodes"] = json{{"metadata", json::object()}, {"items", std::move(items)}};
  } else {
    out["Nodes"] = nullptr;
  }
  return out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string renderPriorities(const std::vector<std::pair<std::string, int>>& scores) {
  json out = json::array();
  for (const auto& [host, score] : scores) {
    out.push_back({{"Host", host}, {"Score", score}});
  }
  return out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string renderBindingReply(const std::string& error) { return json{{"Error", error}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

std::string renderError(const std::string& error) {
  return json{{"Error", error}, {"NodeNames", nullptr}, {"Nodes", nullptr}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace ker
