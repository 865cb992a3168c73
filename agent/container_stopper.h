#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"

namespace ker::agent {

// Stops a container on this host by killing its first process. NRI (v0.12.3, containerd
// v2.4.2) drops the evictions a plugin asks for, in CreateContainer answers and in
// UpdateContainers alike, so this is the agent's only way to stop a container. The kubelet
// then sees it exit and creates it again (per the pod's restartPolicy), through the agent.
// The agent needs the host's PID namespace (hostPID) and CAP_KILL for this.
class ContainerStopper {
 public:
  // procRoot: where the host's /proc is ("/proc" with hostPID).
  explicit ContainerStopper(std::string procRoot = "/proc") : procRoot_(std::move(procRoot)) {}
  virtual ~ContainerStopper() = default;

  // Sends SIGKILL to pid if it is still a process of the container containerID: its cgroup
  // path names the container, checked on a pidfd so a reused PID is never hit. The rest of
  // the container goes with it (the end of its PID namespace's init, or the shim's kill-all
  // when it shares the pod's). NotFound when the process is gone or belongs to another.
  virtual Status stop(uint32_t pid, const std::string& containerId) const;

 private:
  std::string procRoot_;
};

}  // namespace ker::agent
