#include "agent/advertised_names.h"

#include <nlohmann/json.hpp>
#include <optional>

#include "agent/state_file.h"
#include "model/container_shares.h"

namespace ker::agent {

namespace {

constexpr const char* kFileName = "advertised-names.json";
constexpr size_t kMaxBytes = size_t{1} << 20;  // far above any record the agent writes
constexpr const char* kKey = "extendedResourceNames";

}  // namespace

AdvertisedNames::AdvertisedNames(std::string dir)
    : dir_(std::move(dir)), path_(stateFilePath(dir_, kFileName)) {}

Status AdvertisedNames::load(std::set<std::string>& out) const {
  out.clear();
  std::optional<std::string> text;
  if (Status st = readWholeFile(path_, kMaxBytes, text); !st.ok() || !text) {
    return st;
  }
  const nlohmann::json doc = nlohmann::json::parse(*text, nullptr, false);
  auto garbled = [&](const std::string& why) {
    return Status::invalid(path_ + " is not the agent's record of advertised names: " + why);
  };
  if (doc.is_discarded()) {
    return garbled("not JSON");
  }
  const auto names = doc.is_object() ? doc.find(kKey) : doc.end();
  if (names == doc.end() || !names->is_array()) {
    return garbled(std::string("no array \"") + kKey + "\"");
  }
  std::set<std::string> read;
  for (const auto& name : *names) {
    // A name that is not an extended resource's (cpu, say) is never the agent's to remove.
    if (!name.is_string() || !isExtendedResourceName(name.get<std::string>())) {
      return garbled("not an extended resource name: " + name.dump());
    }
    read.insert(name.get<std::string>());
  }
  out = std::move(read);
  return {};
}

Status AdvertisedNames::store(const std::set<std::string>& names) const {
  return writeStateFile(dir_, kFileName, nlohmann::json{{kKey, names}}.dump() + "\n");
}

}  // namespace ker::agent
