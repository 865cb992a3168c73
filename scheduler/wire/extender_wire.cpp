#include "scheduler/wire/extender_wire.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>
#include <deque>
#include <unordered_map>

#include "scheduler/wire/json_text.h"

namespace ker {

namespace {

using json = nlohmann::json;
using Kind = JsonReader::Kind;

constexpr int kMaxDepth = 64;

bool equalsFold(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// The member Go's encoding/json would pick from candidates whose keys all equal `name` but for
// case, in document order: a later duplicate replaces an earlier one, as in a parsed document, and
// without an exact key the first key in byte order (a document's key order) wins.
template <class Member>
Member* pick(std::vector<Member>& members, std::string_view name) {
  Member* best = nullptr;
  for (auto& m : members) {
    const bool exact = m.key == name;
    if (best == nullptr || (exact && best->key != name) ||
        (exact == (best->key == name) && m.key <= best->key)) {
      best = &m;
    }
  }
  return best;
}

// nlohmann::json::type_name() for the kind, so messages read as before.
const char* typeName(Kind kind) {
  switch (kind) {
    case Kind::kNull:
      return "null";
    case Kind::kBool:
      return "boolean";
    case Kind::kNumber:
      return "number";
    case Kind::kString:
      return "string";
    case Kind::kArray:
      return "array";
    case Kind::kObject:
      return "object";
  }
  return "unknown";
}

// The Pod is read into a document, which takes about ten times its text: bound it by what
// the API can store (kube-apiserver refuses request bodies over 3 MiB) so a hostile body
// cannot make the extender hold gigabytes.
constexpr size_t kMaxPodBytes = size_t{3} << 20;

// The most nodes one request may name, twenty times Kubernetes' largest supported cluster
// (5,000 nodes): the filter answers each node with its own entry, so a body of millions of
// one-letter names would otherwise cost a reply of gigabytes.
constexpr size_t kMaxNodes = 100'000;

void checkNodeCount(size_t count) {
  if (count > kMaxNodes) {
    throw WireError("the request names " + std::to_string(count) + " nodes; at most " +
                    std::to_string(kMaxNodes) + " are served");
  }
}

json parseValidated(std::string_view text) {
  try {
    return json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {
    throw WireError(std::string("malformed JSON: ") + e.what());
  }
}

struct PodMember {
  std::string key;
  Kind kind;
  std::string_view text;
};

struct NamesMember {
  std::string key;
  Kind kind;
  bool allStrings = true;
  std::vector<std::string_view> names;
};

struct NodeItem {
  Kind kind;
  std::string_view text;
  std::string_view name;  // of Node objects only
  std::string_view labels;
};

struct ItemsMember {
  std::string key;
  Kind kind;
  std::vector<NodeItem> elements;
};

struct NodesMember {
  std::string key;
  Kind kind;
  std::vector<ItemsMember> items;
};

// A string read as a view; one that had escapes is kept decoded in `decoded`.
std::string_view readName(JsonReader& r, std::deque<std::string>& decoded) {
  std::string scratch;
  const std::string_view name = r.readStringView(scratch);
  return name.data() == scratch.data() ? decoded.emplace_back(std::move(scratch)) : name;
}

// metadata.name and the text of metadata.labels of the Node object at the reader, as
// Node::fromJson reads them: a name of the wrong type reads as empty; a later duplicate key
// wins.
void readNodeMeta(JsonReader& r, std::string_view& name, std::string_view& labels,
                  std::deque<std::string>& decoded) {
  std::string key;
  r.openObject();
  while (r.next(key)) {
    if (key != "metadata" || r.peek() != Kind::kObject) {
      r.skip();
      continue;
    }
    r.openObject();
    while (r.next(key)) {
      if (key == "name") {
        name = r.peek() == Kind::kString ? readName(r, decoded) : (r.skip(), std::string_view());
      } else if (key == "labels") {
        labels = r.peek() == Kind::kObject ? r.skip() : (r.skip(), std::string_view());
      } else {
        r.skip();
      }
    }
  }
}

// Writes into a string grown once to an upper bound of what will be written, then trimmed
// to what was. Per node, std::string's out-of-line appends took about 250 instructions for
// the 30 bytes of a priority, and a reply names thousands of nodes.
class BoundedWriter {
 public:
  BoundedWriter(std::string& out, size_t most) : out_(out) {
    const size_t start = out.size();
    out.resize(start + most);
    next_ = out.data() + start;
  }
  ~BoundedWriter() { out_.resize(static_cast<size_t>(next_ - out_.data())); }
  BoundedWriter(const BoundedWriter&) = delete;
  BoundedWriter& operator=(const BoundedWriter&) = delete;

  template <size_t N>
  void literal(const char (&text)[N]) {
    std::memcpy(next_, text, N - 1);
    next_ += N - 1;
  }
  void text(std::string_view text) {
    if (!text.empty()) {  // a default view's null data may not be given to memcpy
      std::memcpy(next_, text.data(), text.size());
      next_ += text.size();
    }
  }
  void number(int value) { next_ = std::to_chars(next_, next_ + kMaxIntDigits, value).ptr; }

  static constexpr size_t kMaxIntDigits = 11;

 private:
  std::string& out_;
  char* next_;
};

void appendStringMap(std::string& out,
                     const std::vector<std::pair<std::string_view, std::string>>& m) {
  out += '{';
  bool first = true;
  for (const auto& [k, v] : m) {
    out += first ? "" : ",";
    first = false;
    appendJsonString(out, k);
    out += ':';
    appendJsonString(out, v);
  }
  out += '}';
}

}  // namespace

ExtenderArgs parseExtenderArgs(std::string_view body) {
  if (body.empty()) {
    throw WireError("empty request body");
  }
  JsonReader r(body, kMaxDepth);
  if (const Kind top = r.peek(); top != Kind::kObject) {
    r.skip();
    r.finish();  // malformed JSON is reported before the wrong shape, as by a parser
    throw WireError(std::string("ExtenderArgs must be a JSON object, got ") + typeName(top));
  }
  // One pass records the members the fields could come from; the checks follow once the
  // whole body is known to be JSON.
  std::vector<PodMember> pods;
  std::vector<NamesMember> nameLists;
  std::vector<NodesMember> nodeLists;
  ExtenderArgs args;
  args.body = body;
  std::string key;
  r.openObject();
  while (r.next(key)) {
    if (equalsFold(key, "Pod")) {
      const Kind kind = r.peek();
      pods.push_back({key, kind, r.skip()});
    } else if (equalsFold(key, "NodeNames")) {
      NamesMember m{key, r.peek()};
      if (m.kind != Kind::kArray) {
        r.skip();
      } else {
        r.openArray();
        while (!r.plainStrings(m.names) && r.next()) {
          if (r.peek() == Kind::kString) {
            m.names.push_back(readName(r, args.decodedNames));
          } else {
            m.allStrings = false;
            r.skip();
          }
        }
      }
      nameLists.push_back(std::move(m));
    } else if (equalsFold(key, "Nodes")) {
      NodesMember m{key, r.peek()};
      if (m.kind != Kind::kObject) {
        r.skip();
      } else {
        std::string inner;
        r.openObject();
        while (r.next(inner)) {
          if (!equalsFold(inner, "items")) {
            r.skip();
            continue;
          }
          ItemsMember items{inner, r.peek()};
          if (items.kind != Kind::kArray) {
            r.skip();
          } else {
            r.openArray();
            while (r.next()) {
              NodeItem& item = items.elements.emplace_back();
              item.kind = r.peek();
              const size_t start = r.offset();
              if (item.kind == Kind::kObject) {
                readNodeMeta(r, item.name, item.labels, args.decodedNames);
              } else {
                r.skip();
              }
              item.text = body.substr(start, r.offset() - start);
            }
          }
          m.items.push_back(std::move(items));
        }
      }
      nodeLists.push_back(std::move(m));
    } else {
      r.skip();
    }
  }
  r.finish();

  const PodMember* pod = pick(pods, "Pod");
  if (pod == nullptr || pod->kind == Kind::kNull) {
    throw WireError("Pod is required");
  }
  if (pod->kind != Kind::kObject) {
    throw WireError(std::string("Pod must be an object, got ") + typeName(pod->kind));
  }
  if (pod->text.size() > kMaxPodBytes) {
    throw WireError("Pod of " + std::to_string(pod->text.size()) + " bytes exceeds the limit of " +
                    std::to_string(kMaxPodBytes) + " bytes");
  }
  const nlohmann::json podDoc = parseValidated(pod->text);
  args.pod = Pod::fromJson(podDoc);
  if (const auto status = podDoc.find("status"); status != podDoc.end() && status->is_object()) {
    if (const auto n = status->find("nominatedNodeName"); n != status->end() && n->is_string()) {
      args.nominatedNodeName = n->get<std::string>();
    }
  }
  // No UID is accepted (a hand-written request, a dry run): bound claims then match by name.
  if (args.pod.meta.name.empty()) {
    throw WireError("Pod.metadata.name is required");
  }
  if (args.pod.meta.ns.empty()) {
    args.pod.meta.ns = "default";  // as the API server does, and as bind's PodNamespace
  }

  NamesMember* names = pick(nameLists, "NodeNames");
  NodesMember* nodes = pick(nodeLists, "Nodes");
  if (names != nullptr && names->kind != Kind::kNull) {
    if (names->kind != Kind::kArray) {
      throw WireError(std::string("NodeNames must be an array, got ") + typeName(names->kind));
    }
    if (!names->allStrings) {
      throw WireError("NodeNames must hold strings");
    }
    checkNodeCount(names->names.size());
    args.nodeNames = std::move(names->names);
  } else if (nodes != nullptr && nodes->kind != Kind::kNull) {
    if (nodes->kind != Kind::kObject) {
      throw WireError(std::string("Nodes must be a NodeList object, got ") + typeName(nodes->kind));
    }
    args.hasNodeList = true;
    ItemsMember* items = pick(nodes->items, "items");
    if (items != nullptr && items->kind != Kind::kNull) {
      if (items->kind != Kind::kArray) {
        throw WireError("Nodes.items must be an array");
      }
      checkNodeCount(items->elements.size());
      args.nodeObjects.reserve(items->elements.size());
      args.nodeNames.reserve(items->elements.size());
      args.nodeLabelsText.reserve(items->elements.size());
      for (auto& item : items->elements) {
        if (item.kind != Kind::kObject) {
          throw WireError("Nodes.items must hold Node objects");
        }
        if (item.name.empty()) {
          throw WireError("Nodes.items[].metadata.name is required");
        }
        args.nodeNames.push_back(item.name);
        args.nodeObjects.push_back(item.text);
        args.nodeLabelsText.push_back(item.labels);
      }
    }
  }
  return args;
}

std::map<std::string, std::string> ExtenderArgs::nodeLabels(size_t i) const {
  std::map<std::string, std::string> labels;
  if (nodeLabelsText[i].empty()) {
    return labels;
  }
  // Validated with the whole body already.
  JsonReader r(nodeLabelsText[i], kMaxDepth);
  std::string key;
  r.openObject();
  while (r.next(key)) {
    if (r.peek() != Kind::kString) {
      return {};
    }
    labels[key] = r.readString();
  }
  return labels;
}

namespace {

struct StringMember {
  std::string key;
  Kind kind;
  std::string value;  // when kind is kString
};

// The string field `name` from the members read, as Go's encoding/json picks it.
std::string bindingField(std::vector<StringMember>& members, std::string_view name, bool required) {
  std::vector<StringMember> candidates;
  for (auto& m : members) {
    if (equalsFold(m.key, name)) {
      candidates.push_back(m);
    }
  }
  const StringMember* m = pick(candidates, name);
  if (m == nullptr || m->kind == Kind::kNull) {
    if (required) {
      throw WireError(std::string(name) + " is required");
    }
    return {};
  }
  if (m->kind != Kind::kString) {
    throw WireError(std::string(name) + " must be a string, got " + typeName(m->kind));
  }
  return m->value;
}

}  // namespace

// One forward pass, like parseExtenderArgs: a hostile body costs linear time and keeps only
// the four strings it can name.
BindingArgs parseBindingArgs(std::string_view body) {
  if (body.empty()) {
    throw WireError("empty request body");
  }
  JsonReader r(body, kMaxDepth);
  if (const Kind top = r.peek(); top != Kind::kObject) {
    r.skip();
    r.finish();
    throw WireError(std::string("ExtenderBindingArgs must be a JSON object, got ") + typeName(top));
  }
  std::vector<StringMember> members;
  std::string key;
  r.openObject();
  while (r.next(key)) {
    const bool wanted = equalsFold(key, "PodName") || equalsFold(key, "PodNamespace") ||
                        equalsFold(key, "PodUID") || equalsFold(key, "Node");
    if (!wanted) {
      r.skip();
      continue;
    }
    StringMember m{key, r.peek(), {}};
    if (m.kind == Kind::kString) {
      m.value = r.readString();
    } else {
      r.skip();
    }
    members.push_back(std::move(m));
  }
  r.finish();

  BindingArgs args;
  args.podName = bindingField(members, "PodName", true);
  args.podNamespace = bindingField(members, "PodNamespace", false);
  if (args.podNamespace.empty()) {
    args.podNamespace = "default";
  }
  args.podUid = bindingField(members, "PodUID", true);
  args.node = bindingField(members, "Node", true);
  if (args.podName.empty() || args.podUid.empty() || args.node.empty()) {
    throw WireError("PodName, PodUID and Node must not be empty");
  }
  return args;
}

namespace {

// The member of a parsed object Go's encoding/json would decode into the field `name`: the
// exact key, else the first key equal but for case; null when there is none.
const json* field(const json& object, std::string_view name) {
  const json* best = nullptr;
  std::string_view bestKey;
  for (auto it = object.begin(); it != object.end(); ++it) {
    if (it.key() == name) {
      return &it.value();
    }
    if (equalsFold(it.key(), name) && (best == nullptr || it.key() < bestKey)) {
      best = &it.value();
      bestKey = it.key();
    }
  }
  return best;
}

// One node's Victims (whole Pods) or MetaVictims (UIDs).
NodeVictims nodeVictims(const std::string& node, const json& victims, bool whole) {
  const std::string where = (whole ? "NodeNameToVictims[" : "NodeNameToMetaVictims[") + node + "]";
  if (!victims.is_object()) {
    throw WireError(where + " must be an object, got " + victims.type_name());
  }
  NodeVictims out{.node = node};
  if (const json* n = field(victims, "NumPDBViolations"); n != nullptr && !n->is_null()) {
    if (!n->is_number_integer()) {
      throw WireError(where + ".NumPDBViolations must be an integer");
    }
    out.numPdbViolations = n->get<int64_t>();
  }
  const json* pods = field(victims, "Pods");
  if (pods == nullptr || pods->is_null()) {
    return out;
  }
  if (!pods->is_array()) {
    throw WireError(where + ".Pods must be an array, got " + pods->type_name());
  }
  for (const auto& p : *pods) {
    if (!p.is_object()) {
      throw WireError(where + ".Pods must hold objects");
    }
    VictimPod victim;
    const json* uid = nullptr;
    if (!whole) {
      uid = field(p, "UID");
    } else if (const json* meta = field(p, "metadata"); meta != nullptr && meta->is_object()) {
      uid = field(*meta, "uid");
    }
    if (uid == nullptr || !uid->is_string() || uid->get_ref<const std::string&>().empty()) {
      throw WireError(where + ".Pods[] needs a non-empty " + (whole ? "metadata.uid" : "UID"));
    }
    victim.uid = uid->get<std::string>();
    if (whole) {
      victim.priority = Pod::fromJson(p).priority;
    }
    out.pods.push_back(std::move(victim));
  }
  return out;
}

}  // namespace

PreemptionArgs parsePreemptionArgs(std::string_view body) {
  if (body.empty()) {
    throw WireError("empty request body");
  }
  // Validated with a depth limit first: the document below is built recursively.
  JsonReader r(body, kMaxDepth);
  const Kind top = r.peek();
  r.skip();
  r.finish();
  if (top != Kind::kObject) {
    throw WireError(std::string("ExtenderPreemptionArgs must be a JSON object, got ") +
                    typeName(top));
  }
  const json doc = parseValidated(body);
  const json* pod = field(doc, "Pod");
  if (pod == nullptr || pod->is_null()) {
    throw WireError("Pod is required");
  }
  if (!pod->is_object()) {
    throw WireError(std::string("Pod must be an object, got ") + pod->type_name());
  }
  PreemptionArgs args;
  args.pod = Pod::fromJson(*pod);
  if (args.pod.meta.name.empty()) {
    throw WireError("Pod.metadata.name is required");
  }
  if (args.pod.meta.ns.empty()) {
    args.pod.meta.ns = "default";
  }
  // kube-scheduler sends one of the two maps (MetaVictims when nodeCacheCapable); the other
  // is null.
  const json* victims = field(doc, "NodeNameToMetaVictims");
  bool whole = false;
  if (victims == nullptr || victims->is_null()) {
    victims = field(doc, "NodeNameToVictims");
    whole = true;
  }
  if (victims == nullptr || victims->is_null()) {
    return args;
  }
  if (!victims->is_object()) {
    throw WireError(std::string(whole ? "NodeNameToVictims" : "NodeNameToMetaVictims") +
                    " must be an object, got " + victims->type_name());
  }
  checkNodeCount(victims->size());
  for (auto it = victims->begin(); it != victims->end(); ++it) {
    if (it.key().empty()) {
      throw WireError("a node name must not be empty");
    }
    args.nodes.push_back(nodeVictims(it.key(), it.value(), whole));
  }
  return args;
}

std::string renderPreemptionResult(const std::vector<NodeVictims>& nodes) {
  std::string out = "{\"NodeNameToMetaVictims\":{";
  for (size_t i = 0; i < nodes.size(); ++i) {
    out += i == 0 ? "" : ",";
    appendJsonString(out, nodes[i].node);
    out += ":{\"Pods\":[";
    for (size_t k = 0; k < nodes[i].pods.size(); ++k) {
      out += k == 0 ? "{\"UID\":" : ",{\"UID\":";
      appendJsonString(out, nodes[i].pods[k].uid);
      out += '}';
    }
    out += "],\"NumPDBViolations\":" + std::to_string(nodes[i].numPdbViolations) + "}";
  }
  return out + "}}";
}

// Written directly rather than through a document: for thousands of nodes the reply is most
// of the filter's output, and in NodeList mode it carries the Node objects' original bytes.
// Keys come in the order nlohmann::json's sorted objects used, so NodeNames-mode replies are
// byte for byte what they were.
SplicedBody renderFilterReply(const FilterReply& reply, const ExtenderArgs& args) {
  SplicedBody body;
  std::string& out = body.text;
  size_t estimate = 128 + reply.error.size();
  for (const auto& name : reply.passing) {
    estimate += name.size() + 3;
  }
  for (const auto* failed : {&reply.failed, &reply.failedUnresolvable}) {
    for (const auto& [node, message] : *failed) {
      estimate += node.size() + message.size() + 6;
    }
  }
  out.reserve(estimate);
  out += "{\"Error\":";
  appendJsonString(out, reply.error);
  out += ",\"FailedAndUnresolvableNodes\":";
  appendStringMap(out, reply.failedUnresolvable);
  out += ",\"FailedNodes\":";
  appendStringMap(out, reply.failed);
  out += ",\"NodeNames\":[";
  // A name read without escapes is valid JSON string text as it stands (the reader refused
  // control characters and broken UTF-8): appendJsonString would copy it unchanged.
  if (args.decodedNames.empty()) {
    size_t most = 0;
    for (const auto& name : reply.passing) {
      most += name.size() + 3;
    }
    BoundedWriter w(out, most);
    for (size_t i = 0; i < reply.passing.size(); ++i) {
      if (i == 0) {
        w.literal("\"");
      } else {
        w.literal(",\"");
      }
      w.text(reply.passing[i]);
      w.literal("\"");
    }
  } else {
    for (size_t i = 0; i < reply.passing.size(); ++i) {
      out += i == 0 ? "" : ",";
      appendJsonString(out, reply.passing[i]);
    }
  }
  out += "],\"Nodes\":";
  if (args.hasNodeList) {
    std::unordered_map<std::string_view, size_t> byName;
    for (size_t i = 0; i < args.nodeObjects.size(); ++i) {
      byName.emplace(args.nodeNames[i], i);
    }
    out += "{\"items\":[";
    size_t following = args.nodeObjects.size();  // the item after the last one written
    for (const auto& name : reply.passing) {
      if (auto it = byName.find(name); it != byName.end()) {
        // parseExtenderArgs took every Node object's bytes from args.body, in order.
        const std::string_view node = args.nodeObjects[it->second];
        const size_t offset = static_cast<size_t>(node.data() - args.body.data());
        if (it->second == following) {
          // The slice grows over the request's own separator, so a run of passing Nodes is
          // one piece to write.
          auto& last = body.inserts.back();
          last.length = offset + node.size() - last.offset;
        } else {
          out += body.inserts.empty() ? "" : ",";
          body.insertRequestBytes(offset, node.size());
        }
        following = it->second + 1;
      }
    }
    out += "],\"metadata\":{}}";
  } else {
    out += "null";
  }
  out += '}';
  return body;
}

std::string renderPriorities(const std::vector<std::pair<std::string_view, int>>& scores,
                             bool verbatimHosts) {
  std::string out = "[";
  if (verbatimHosts) {
    constexpr size_t kEntry =
        sizeof(",{\"Host\":\"\",\"Score\":}") - 1 + BoundedWriter::kMaxIntDigits;
    size_t most = 0;
    for (const auto& [host, score] : scores) {
      most += host.size() + kEntry;
    }
    BoundedWriter w(out, most);
    for (size_t i = 0; i < scores.size(); ++i) {
      if (i == 0) {
        w.literal("{\"Host\":\"");
      } else {
        w.literal(",{\"Host\":\"");
      }
      w.text(scores[i].first);
      w.literal("\",\"Score\":");
      w.number(scores[i].second);
      w.literal("}");
    }
  } else {
    for (size_t i = 0; i < scores.size(); ++i) {
      out += i == 0 ? "{\"Host\":" : ",{\"Host\":";
      appendJsonString(out, scores[i].first);
      out += ",\"Score\":";
      out += std::to_string(scores[i].second);
      out += '}';
    }
  }
  out += ']';
  return out;
}

std::string renderBindingReply(const std::string& error) {
  std::string out = "{\"Error\":";
  appendJsonString(out, error);
  return out + "}";
}

std::string renderError(const std::string& error) {
  std::string out = "{\"Error\":";
  appendJsonString(out, error);
  return out + ",\"NodeNames\":null,\"Nodes\":null}";
}

}  // namespace ker
