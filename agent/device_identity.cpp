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
