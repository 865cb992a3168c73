#include "model/container_shares.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "common/json_fields.h"

namespace ker {

using json = nlohmann::json;
using fields::member;
using fields::objectMember;
using fields::stringMember;

const char* toString(ContainerKind kind) {
  switch (kind) {
    case ContainerKind::kInit:
      return "Init";
    case ContainerKind::kSidecar:
      return "Sidecar";
    case ContainerKind::kApp:
      return "App";
  }
  return "App";
}

std::optional<ContainerKind> parseContainerKind(std::string_view text) {
  for (ContainerKind k : {ContainerKind::kInit, ContainerKind::kSidecar, ContainerKind::kApp}) {
    if (text == toString(k)) {
      return k;
    }
  }
  return std::nullopt;
}

bool isExtendedResourceName(std::string_view name) {
  const size_t slash = name.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == name.size() ||
      name.find('/', slash + 1) != std::string_view::npos) {
    return false;
  }
  const std::string_view domain = name.substr(0, slash);
  if (domain == "kubernetes.io" ||
      (domain.size() > 14 && domain.substr(domain.size() - 14) == ".kubernetes.io")) {
    return false;
  }
  return name.substr(0, 9) != "requests.";
}

namespace {

// The most a container's count is read as: far above any claim's (the CRD allows 1,024), low
// enough that a pod's sum of them cannot overflow.
constexpr int64_t kMaxCount = int64_t{1} << 30;

// A count as the API server stores an extended resource's (a whole number, with a decimal suffix
// when large: 1k, 2M). A name a class does not serve may be anything a device plugin counts, so
// nothing here fails the pod: what does not read as a whole number, or is larger, counts as
// kMaxCount, which no claim can be made for.
int64_t wholeCount(const json& v) {
  if (!v.is_string()) {
    return kMaxCount;
  }
  const std::string text = v.get<std::string>();
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') {
    ++digits;
  }
  const std::string suffix = text.substr(digits);
  int zeros = 0;
  if (suffix == "k") {
    zeros = 3;
  } else if (suffix == "M") {
    zeros = 6;
  } else if (suffix == "G") {
    zeros = 9;
  } else if (!suffix.empty() || digits == 0) {
    return kMaxCount;
  }
  int64_t count = 0;
  for (size_t i = 0; i < digits; ++i) {
    count = std::min(kMaxCount, count * 10 + (text[i] - '0'));
  }
  for (int i = 0; i < zeros; ++i) {
    count = std::min(kMaxCount, count * 10);
  }
  return count;
}

void readContainers(const json& spec, const char* key, bool init, ExtendedRequests& out) {
  const json* list = member(spec, key);
  if (!list) {
    return;
  }
  const std::string base = std::string("spec.") + key;
  if (!list->is_array()) {
    fields::wrongType(base, "an array", *list);
  }
  for (size_t i = 0; i < list->size(); ++i) {
    const json& c = (*list)[i];
    const std::string at = base + "[" + std::to_string(i) + "]";
    if (!c.is_object()) {
      fields::wrongType(at, "an object", c);
    }
    const json* resources = objectMember(c, "resources", at + ".resources");
    if (!resources) {
      continue;
    }
    ContainerKind kind = ContainerKind::kApp;
    if (init) {
      kind = stringMember(c, "restartPolicy", at + ".restartPolicy") == "Always"
                 ? ContainerKind::kSidecar
                 : ContainerKind::kInit;
    }
    // Kubernetes requires a limit for an extended resource, and a request equal to it when one
    // is set: the limit is the count, a request alone stands for it.
    std::map<std::string, int64_t> counts;
    for (const char* which : {"requests", "limits"}) {
      const json* m = objectMember(*resources, which, at + ".resources." + which);
      if (!m) {
        continue;
      }
      for (const auto& [name, value] : m->items()) {
        if (isExtendedResourceName(name)) {
          counts[name] = wholeCount(value);
        }
      }
    }
    const std::string name = stringMember(c, "name", at + ".name");
    for (const auto& [resource, count] : counts) {
      if (count > 0) {
        out[resource].push_back({name, count, kind});
      }
    }
  }
}

}  // namespace

ExtendedRequests readExtendedRequests(const json& podSpec) {
  ExtendedRequests out;
  if (!podSpec.is_object()) {
    return out;
  }
  readContainers(podSpec, "initContainers", true, out);
  readContainers(podSpec, "containers", false, out);
  return out;
}

int64_t devicesNeeded(const std::vector<ContainerShare>& shares) {
  int64_t together = 0;  // sidecars so far, then with the app containers
  int64_t most = 0;
  for (const auto& s : shares) {
    if (s.kind == ContainerKind::kInit) {
      most = std::max(most, together + s.count);
    } else {
      together += s.count;
    }
  }
  return std::max(most, together);
}

std::map<std::string, std::vector<std::string>> shareDevices(
    const std::vector<ContainerShare>& shares, const std::vector<std::string>& devices) {
  std::map<std::string, std::vector<std::string>> out;
  auto slice = [&](size_t from, int64_t count) {
    std::vector<std::string> s;
    for (size_t i = from; i < devices.size() && i < from + static_cast<size_t>(count); ++i) {
      s.push_back(devices[i]);
    }
    return s;
  };
  // Sidecars first, in order, so that an init container's slice starts after the sidecars
  // declared before it, which already run beside it.
  size_t next = 0;
  for (const auto& s : shares) {
    if (s.kind == ContainerKind::kSidecar) {
      out[s.name] = slice(next, s.count);
      next += static_cast<size_t>(s.count);
    }
  }
  size_t sidecarsBefore = 0;
  for (const auto& s : shares) {
    if (s.kind == ContainerKind::kSidecar) {
      sidecarsBefore += static_cast<size_t>(s.count);
    } else if (s.kind == ContainerKind::kInit) {
      out[s.name] = slice(sidecarsBefore, s.count);
    }
  }
  for (const auto& s : shares) {
    if (s.kind == ContainerKind::kApp) {
      out[s.name] = slice(next, s.count);
      next += static_cast<size_t>(s.count);
    }
  }
  return out;
}

}  // namespace ker
