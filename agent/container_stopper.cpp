#include "agent/container_stopper.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fstream>
#include <iterator>

namespace ker::agent {

namespace {

// Closes a descriptor when it goes out of scope.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) {
      ::close(fd);
    }
  }
};

// The process's cgroup file: the container runtime puts a container's processes in a cgroup
// whose path ends in (cgroupfs) or contains (systemd's cri-containerd-ID.scope) its ID.
bool inContainer(const std::string& procRoot, uint32_t pid, const std::string& containerId) {
  std::ifstream in(procRoot + "/" + std::to_string(pid) + "/cgroup");
  if (!in || containerId.empty()) {
    return false;
  }
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  return text.find(containerId) != std::string::npos;
}

// Through syscall(2): bookworm's glibc declares the wrappers without C linkage for C++.
int pidfdOpen(pid_t pid) {
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
}
int pidfdKill(int pidfd) {
  return static_cast<int>(::syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, nullptr, 0));
}

}  // namespace

Status ContainerStopper::stop(uint32_t pid, const std::string& containerId) const {
  const std::string what = "process " + std::to_string(pid) + " of container " + containerId;
  if (pid == 0) {
    return Status::notFound(what + ": no process");
  }
  // The pidfd holds on to this process: if it exits and its PID is reused after the check,
  // the signal fails instead of reaching the newcomer.
  Fd pidfd{pidfdOpen(static_cast<pid_t>(pid))};
  if (pidfd.fd < 0) {
    const int err = errno;
    return err == ESRCH ? Status::notFound(what + " is gone")
                        : Status::internal(what + ": pidfd_open: " + std::strerror(err));
  }
  if (!inContainer(procRoot_, pid, containerId)) {
    return Status::notFound(what + ": the process is in no cgroup of that container");
  }
  if (pidfdKill(pidfd.fd) != 0) {
    const int err = errno;
    return err == ESRCH ? Status::notFound(what + " is gone")
                        : Status::internal(what + ": kill: " + std::strerror(err));
  }
  return Status();
}

}  // namespace ker::agent
