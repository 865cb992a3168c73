#include "common/resource.h"

namespace ker {

namespace {

bool unreserved(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_' || c == '~';
}

// One escaped path segment. "." and ".." are escaped too: libcurl would otherwise squash them
// as dot-segments and address a different URL.
void appendSegment(std::string& out, std::string_view segment) {
  out += '/';
  if (segment == "." || segment == "..") {
    for (size_t i = 0; i < segment.size(); ++i) {
      out += "%2E";
    }
    return;
  }
  out += urlEscape(segment);
}

}  // namespace

std::string urlEscape(std::string_view value) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(value.size());
  for (unsigned char c : value) {
    if (unreserved(c)) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
    }
  }
  return out;
}

std::string Resource::path(std::string_view ns, std::string_view name,
                           std::string_view subresource) const {
  std::string out = group.empty() ? "/api" : "/apis/" + group;
  out += '/';
  out += version;
  if (namespaced && !ns.empty()) {
    out += "/namespaces";
    appendSegment(out, ns);
  }
  out += '/';
  out += plural;
  if (!name.empty()) {
    appendSegment(out, name);
    if (!subresource.empty()) {
      appendSegment(out, subresource);
    }
  }
  return out;
}

namespace resources {
const Resource kPods{"", "v1", "pods", true};
const Resource kNodes{"", "v1", "nodes", false};
const Resource kEvents{"", "v1", "events", true};
const Resource kLeases{"coordination.k8s.io", "v1", "leases", true};
const Resource kNamespaces{"", "v1", "namespaces", false};
const Resource kPodDisruptionBudgets{"policy", "v1", "poddisruptionbudgets", true};
const Resource kValidatingAdmissionPolicies{"admissionregistration.k8s.io", "v1",
                                            "validatingadmissionpolicies", false};
const Resource kValidatingAdmissionPolicyBindings{"admissionregistration.k8s.io", "v1",
                                                  "validatingadmissionpolicybindings", false};
}  // namespace resources

}  // namespace ker
