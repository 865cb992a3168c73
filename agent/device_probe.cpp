#include "agent/device_probe.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <filesystem>

#include "agent/health_check.h"
#include "common/comma_list.h"

namespace ker::agent {

std::optional<DeviceNodeInfo> DeviceProbe::deviceNode(const std::string& path) const {
  struct stat st {};
  if (::stat((hostRoot_ + path).c_str(), &st) != 0) {
    return std::nullopt;
  }
  DeviceNodeInfo info;
  if (S_ISCHR(st.st_mode)) {
    info.type = 'c';
  } else if (S_ISBLK(st.st_mode)) {
    info.type = 'b';
  } else {
    return std::nullopt;
  }
  info.major = major(st.st_rdev);
  info.minor = minor(st.st_rdev);
  info.fileMode = st.st_mode & 07777;
  info.uid = st.st_uid;
  info.gid = st.st_gid;
  return info;
}

std::string DeviceProbe::resolve(const std::string& path) const {
  std::error_code ec;
  const std::filesystem::path real = std::filesystem::canonical(hostRoot_ + path, ec);
  if (ec) {
    return path;
  }
  // A symlink that leaves the host root (absolute, as seen from the agent's container) is not
  // the host's path.
  const std::string text = real.string();
  if (hostRoot_.empty()) {
    return text;
  }
  if (text == hostRoot_) {
    return "/";
  }
  return text.rfind(hostRoot_ + "/", 0) == 0 ? text.substr(hostRoot_.size()) : path;
}

CommandResult DeviceProbe::runDiscoveryCommand(const DiscoverySource& source) const {
  return runCommand(
      source.command, {{"EXTENDED_RESOURCE_HOST_ROOT", hostRoot_}},
      {.timeout = source.timeout, .maxOutput = size_t{1} << 20, .stderrToOutput = false});
}

CdiDevices DeviceProbe::cdiDevices() const {
  return readCdiSpecDirs(hostRoot_, cdiSpecDirs_);
}

HealthObservation DeviceProbe::check(const DeviceSpec& device,
                                     const std::set<std::string>& cdiDevices) const {
  HealthObservation seen;
  if (!device.cdiDevice.empty() && cdiDevices.count(device.cdiDevice) == 0) {
    seen.healthy = false;
    seen.problem =
        "CDI device " + device.cdiDevice + " is in no spec under " + joinCommaList(cdiSpecDirs_);
    return seen;
  }
  for (const auto& n : device.deviceNodes) {
    if (!deviceNode(n.path)) {
      seen.healthy = false;
      seen.problem = "device node " + n.path + " is missing";
      return seen;
    }
  }
  for (const auto& m : device.mounts) {
    struct stat st {};
    if (::stat((hostRoot_ + m.hostPath).c_str(), &st) != 0) {
      seen.healthy = false;
      seen.problem = "mount source " + m.hostPath + " is missing";
      return seen;
    }
  }
  if (device.healthCheck) {
    CheckResult r = runHealthCheck(device.healthCheck->command,
                                   {{"EXTENDED_RESOURCE_DEVICE_NAME", device.name},
                                    {"EXTENDED_RESOURCE_DEVICE_ID", device.deviceID},
                                    {"EXTENDED_RESOURCE_HOST_ROOT", hostRoot_}},
                                   device.healthCheck->timeout);
    seen.healthy = r.healthy;
    seen.problem = r.problem;
  }
  return seen;
}

}  // namespace ker::agent
