#include "agent/device_identity.h"

#include <algorithm>

namespace ker::agent {

std::string deviceIdKey(const std::string& rawResourceName, const std::string& deviceID) {
  // A resource name is a qualified name and holds no '=', so the key reads back one way.
  return "id:" + rawResourceName + "=" + deviceID;
}

std::string deviceNameKey(const std::string& name) {
  return "name:" + name;
}

std::vector<std::string> deviceKeys(const DeviceSpec& device) {
  std::vector<std::string> keys{deviceNameKey(device.name),
                                deviceIdKey(device.rawResourceName, device.deviceID)};
  if (!device.cdiDevice.empty()) {
    keys.push_back("cdi:" + device.cdiDevice);
  }
  return keys;
}

KeysByName knownKeys(const NodeFile& inventory, const std::vector<ExtendedResource>& published) {
  KeysByName out;
  auto add = [&out](const std::string& name, const std::string& key) {
    auto& keys = out[name];
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
      keys.push_back(key);
    }
  };
  for (const auto& d : inventory.devices) {
    for (const auto& key : deviceKeys(d)) {
      add(d.name, key);
    }
  }
  for (const auto& er : published) {
    add(er.meta.name, deviceNameKey(er.meta.name));
    if (er.invalid.empty() && !er.rawResourceName.empty() && !er.deviceID.empty()) {
      add(er.meta.name, deviceIdKey(er.rawResourceName, er.deviceID));
    }
  }
  return out;
}

std::string sharedKey(const DeviceSpec& a, const DeviceSpec& b) {
  const auto theirs = deviceKeys(b);
  for (const auto& key : deviceKeys(a)) {
    if (std::find(theirs.begin(), theirs.end(), key) != theirs.end()) {
      return key;
    }
  }
  return "";
}

}  // namespace ker::agent
