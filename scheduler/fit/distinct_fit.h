#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model/objects.h"

namespace ker {

// Each claim's chosen devices, as indexes into the node's free devices.
using Picks = std::vector<std::vector<size_t>>;

// What the claims' distinctProperty constraints ask of their devices (indexed like the claims).
struct Distinctness {
  static constexpr uint32_t kNoValue = UINT32_MAX;
  // Empty for a claim without a distinctProperty, else each device's value of it as a number
  // (kNoValue for a device without it, which the claim cannot take).
  std::vector<std::vector<uint32_t>> values;
  // For a request's unit whose distinctProperty spans other requests of its claim too, the
  // index of the first such unit, shared by all of them: their devices' values must all
  // differ. kNoGroup for any other claim.
  static constexpr size_t kNoGroup = SIZE_MAX;
  std::vector<size_t> group;
};

// The unit's distinctProperty constraint when it spans other requests of its claim too (units()
// keeps `requests` only on a constraint spanning several); nullptr otherwise.
const DeviceConstraint* spanningDistinct(const ExtendedResourceClaim& unit);

// The Distinctness of these claims over devices with these properties; nullopt when no claim
// has a distinctProperty. `eligible[c]` lists the devices claim c may take.
std::optional<Distinctness> distinctness(
    const std::vector<const ExtendedResourceClaim*>& claims,
    const std::vector<std::vector<size_t>>& eligible,
    const std::vector<const std::map<std::string, std::string>*>& properties);

// How many devices a claim can take at most on its own: its eligible devices, or, with a
// distinct property (`values`, as Distinctness::values), their distinct values.
size_t mostTaken(const std::vector<size_t>& eligible, const std::vector<uint32_t>& values);

// Why fitDistinct found no fit.
enum class DistinctMiss {
  kDevices,  // the devices cannot serve every claim at once, whatever the values
  kValues,   // the requests one distinctProperty spans have too few values between them
  kTries,    // no way of sharing out the values was found within the bound on tries
};

// The most ways of sharing out distinct values fitDistinct tries on one node: it bounds what a
// claim can make the filter spend on a node shape (the planner decides each shape once per
// request), about 10 ms for 16 PCIe roots of 32 devices.
constexpr size_t kMaxValueChoices = 1024;

// What fitDistinct found.
struct DistinctFit {
  std::optional<Picks> picks;                  // each claim's devices, when every claim is served
  DistinctMiss miss = DistinctMiss::kDevices;  // why not, otherwise
  // For kValues: the spanning group (Distinctness::group) that is short, and the most devices
  // its requests could get with values of their own.
  size_t group = Distinctness::kNoGroup;
  size_t most = 0;
};

// Distinct devices for every claim at once, each claim's with a value of its own of its
// distinct property, and the values of the requests one distinctProperty spans all different.
// Devices are tried in list order. Pure.
//
// Without spanning constraints this is one flow. One value serving several requests, while
// other claims may want the same devices, is not a flow (two partitions of the devices' uses
// at once), so then each spanning request's values are chosen, request by request, in the
// order its devices list them, and a flow checks each choice; past kMaxValueChoices choices
// the node does not fit (in practice a node has a handful of PCIe roots or NUMA nodes, and the
// first choice fits).
DistinctFit fitDistinct(const std::vector<const ExtendedResourceClaim*>& claims,
                        const std::vector<std::vector<size_t>>& eligible,
                        const Distinctness& distinct, size_t deviceCount);

}  // namespace ker
