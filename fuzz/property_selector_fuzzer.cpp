// libFuzzer target: a claim's selector of device properties and its constraints, the parts of
// a claim a tenant writes that the extender evaluates against every device. Input starting with '{'
// is a claim's spec as JSON: reading it never crashes, a claim that reads as valid has a valid
// selector that evaluates against any properties, and the devices a fit chooses for it meet its
// constraints (with spec.requests, each request's own and those spanning several). Other input is
// two texts separated by a newline, read as quantities: when both parse, their order is consistent,
// and the four comparison operators agree with it.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "common/label_selector.h"
#include "common/quantity.h"
#include "model/claim_transitions.h"
#include "model/objects.h"
#include "model/suitability.h"
#include "scheduler/fit/allocator.h"

namespace {

using ker::SelectorOperator;

// A claim with spec.requests, fitted as its units side by side (each as its first alternative,
// when it has any): each unit gets its count of devices that suit it and meet its constraints,
// devices of two units meet the constraints spanning both, and the claim's status as the bind
// writes it reads back valid.
void checkRequests(const ker::ExtendedResourceClaim& claim,
                   const std::vector<ker::ExtendedResource>& devices,
                   const std::vector<const ker::ExtendedResource*>& free) {
  std::vector<ker::ExtendedResourceClaim> units;
  std::vector<std::string> alternatives;  // the one each unit is fitted as
  int64_t wanted = 0;
  for (const auto& unit : claim.units()) {
    const bool some = !unit.firstAvailable.empty();
    units.push_back(some ? unit.as(unit.firstAvailable[0]) : unit);
    alternatives.push_back(some ? unit.firstAvailable[0].name : "");
    wanted += units.back().extendedResourceNum;
  }
  if (wanted > 8) {
    return;
  }
  std::vector<const ker::ExtendedResourceClaim*> fitted;
  for (const auto& u : units) {
    fitted.push_back(&u);
  }
  const ker::Fit fit = ker::fitClaims(fitted, free);
  if (!fit.fits) {
    return;
  }
  std::vector<std::vector<const ker::ExtendedResource*>> chosen;
  std::vector<ker::RequestAllocation> allocations;
  for (size_t i = 0; i < units.size(); ++i) {
    const auto& u = units[i];
    const auto& names = fit.assignment.at(ker::unitKey(u));
    std::vector<const std::map<std::string, std::string>*> properties;
    chosen.emplace_back();
    for (const auto& name : names) {
      const auto& d = devices[static_cast<size_t>(std::stoi(name.substr(1)))];
      if (!ker::suits(d, u)) {
        std::abort();
      }
      chosen.back().push_back(&d);
      properties.push_back(&d.properties);
    }
    if (static_cast<int64_t>(names.size()) != u.extendedResourceNum ||
        !meetConstraints(u, properties)) {
      std::abort();
    }
    allocations.push_back({u.request, names, alternatives[i]});
  }
  for (size_t a = 0; a < units.size(); ++a) {
    for (size_t b = a + 1; b < units.size(); ++b) {
      for (const auto* x : chosen[a]) {
        for (const auto* y : chosen[b]) {
          if (!ker::sharedConstraintsMet(units[a], x->properties, units[b], y->properties)) {
            std::abort();
          }
        }
      }
    }
  }
  ker::ExtendedResourceClaim bound = claim;
  if (!bindRequests(bound, {"p", "u"}, "n", allocations).ok()) {
    std::abort();
  }
  const auto read = ker::ExtendedResourceClaim::fromJson(bound.toJson({}));
  if (!read.invalid.empty() || read.allocations != allocations) {
    std::abort();
  }
  for (const auto& each : chosen) {
    for (const auto* d : each) {
      if (!ker::suits(*d, read)) {
        std::abort();
      }
    }
  }
}

void checkClaim(const std::string& text) {
  auto spec = nlohmann::json::parse(text, nullptr, false);
  if (spec.is_discarded()) {
    return;
  }
  nlohmann::json obj = {{"apiVersion", "extendedresource.io/v1alpha1"},
                        {"kind", "ExtendedResourceClaim"},
                        {"metadata", {{"name", "c"}, {"namespace", "ns"}, {"uid", "u"}}},
                        {"spec", spec}};
  auto claim = ker::ExtendedResourceClaim::fromJson(obj);
  if (claim.invalid.empty() && !validate(claim.metadataRequirements).ok()) {
    std::abort();
  }
  const std::vector<std::map<std::string, std::string>> sets = {
      {}, {{"memory", "40Gi"}, {"numaNode", "0"}}, {{"memory", "lots"}, {"type", "k80"}}};
  std::vector<const std::map<std::string, std::string>*> all;
  for (const auto& properties : sets) {
    (void)matches(claim.metadataRequirements, properties);
    (void)unparsedComparison(claim.metadataRequirements, properties);
    // A set of devices meets the constraints only if each one has their properties.
    if (meetConstraints(claim, {&properties}) !=
        ker::constraintKey(claim, properties).has_value()) {
      std::abort();
    }
    all.push_back(&properties);
  }
  (void)meetConstraints(claim, all);
  if (!claim.invalid.empty()) {
    return;
  }
  // Eight devices over two NUMA nodes and three PCIe roots, of the claim's resources in turn:
  // what a fit chooses meets the claim's constraints, and each device suits it.
  const std::vector<std::string> resources = claim.resourceNames();
  std::vector<ker::ExtendedResource> devices(8);
  std::vector<const ker::ExtendedResource*> free;
  for (size_t i = 0; i < devices.size(); ++i) {
    auto& d = devices[i];
    d.meta.name = "d" + std::to_string(i);
    d.rawResourceName = resources[i % resources.size()];
    d.properties = {{"numaNode", std::to_string(i / 4)},
                    {"pciRoot", std::string(1, static_cast<char>('a' + i % 3))},
                    {"memory", i % 2 == 0 ? "40Gi" : "lots"}};
    free.push_back(&d);
  }
  if (!claim.requests.empty()) {
    checkRequests(claim, devices, free);
    return;
  }
  // A claim with alternatives is fitted as each of them, as the planner does.
  std::vector<ker::ExtendedResourceClaim> shapes;
  for (const auto& a : claim.firstAvailable) {
    shapes.push_back(claim.as(a));
  }
  if (shapes.empty()) {
    shapes.push_back(claim);
  }
  for (const auto& shape : shapes) {
    if (shape.extendedResourceNum > 8) {
      continue;
    }
    const ker::Fit fit = ker::fitClaims({&shape}, free);
    if (!fit.fits || fit.assignment.empty()) {
      continue;
    }
    const auto& chosen = fit.assignment.begin()->second;
    std::vector<const std::map<std::string, std::string>*> properties;
    for (const auto& name : chosen) {
      const auto& d = devices[static_cast<size_t>(std::stoi(name.substr(1)))];
      if (!ker::suits(d, shape) || !ker::suits(d, claim)) {
        std::abort();
      }
      properties.push_back(&d.properties);
    }
    if (static_cast<int64_t>(chosen.size()) != shape.extendedResourceNum ||
        !meetConstraints(shape, properties)) {
      std::abort();
    }
  }
}

bool holds(SelectorOperator op, const std::string& have, const std::string& want) {
  ker::LabelSelector s;
  s.dialect = ker::SelectorDialect::kProperties;
  s.matchExpressions.push_back({"p", op, {want}});
  return matches(s, {{"p", have}});
}

void checkQuantities(const std::string& text) {
  const size_t cut = text.find('\n');
  if (cut == std::string::npos) {
    (void)ker::Quantity::parse(text);
    return;
  }
  const std::string a = text.substr(0, cut);
  const std::string b = text.substr(cut + 1);
  auto qa = ker::Quantity::parse(a);
  auto qb = ker::Quantity::parse(b);
  if (!qa || !qb) {
    return;
  }
  const auto ab = *qa <=> *qb;
  const auto ba = *qb <=> *qa;
  if ((ab < 0) != (ba > 0) || (ab == 0) != (ba == 0) || (*qa <=> *qa) != 0) {
    std::abort();
  }
  if (holds(SelectorOperator::kGt, a, b) != (ab > 0) ||
      holds(SelectorOperator::kGe, a, b) != (ab >= 0) ||
      holds(SelectorOperator::kLt, a, b) != (ab < 0) ||
      holds(SelectorOperator::kLe, a, b) != (ab <= 0)) {
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  if (!text.empty() && text[0] == '{') {
    checkClaim(text);
  } else {
    checkQuantities(text);
  }
  return 0;
}
