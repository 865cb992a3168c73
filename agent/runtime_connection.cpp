#include "agent/runtime_connection.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include "common/backoff.h"
#include "common/logging.h"

namespace ker::agent {

namespace {

// Connects a unix stream socket to path: its descriptor in *fd, else why not (errno's text).
nri::Status connectUnix(const std::string& path, int* fd) {
  const std::string what = "connect " + path + ": ";
  sockaddr_un addr{};
  if (path.size() >= sizeof(addr.sun_path)) {
    return nri::Status::ioError(what + "socket path too long");
  }
  const int s = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) {
    return nri::Status::ioError(what + std::strerror(errno));
  }
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size());
  if (::connect(s, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    const int err = errno;
    ::close(s);
    return nri::Status::ioError(what + std::strerror(err));
  }
  *fd = s;
  return nri::Status::ok();
}

}  // namespace

nri::Status RuntimeConnection::serveOnce(const std::atomic<bool>& stop) {
  int fd = -1;
  if (nri::Status s = connectUnix(options_.socketPath, &fd); !s.isOk()) {
    return s;
  }
  nri::PluginDispatcher dispatcher(plugin_);
  nri::Session session(fd, &dispatcher);
  nri::Status s = nri::registerPlugin(&session, options_.pluginName, options_.pluginIndex,
                                      options_.registerTimeout);
  if (!s.isOk()) {
    return s;
  }
  metrics_->runtimeConnects.inc();
  metrics_->runtimeConnected.set(1);
  connected_ = true;
  log::info("serving the container runtime", {{"socket", options_.socketPath},
                                              {"plugin", options_.pluginName},
                                              {"index", options_.pluginIndex}});
  while (!stop.load()) {
    s = session.serve(std::chrono::milliseconds(200));
    if (!s.isOk()) {
      break;
    }
  }
  connected_ = false;
  metrics_->runtimeConnected.set(0);
  return stop.load() ? nri::Status::ok() : s;
}

void RuntimeConnection::run(const std::atomic<bool>& stop) {
  const Backoff reconnects{options_.minBackoff, 2.0, options_.maxBackoff, 0};
  int failures = 0;
  while (!stop.load()) {
    const auto started = std::chrono::steady_clock::now();
    nri::Status s = serveOnce(stop);
    if (stop.load()) {
      break;
    }
    // A connection that served for a while was healthy: reconnect quickly after it.
    if (std::chrono::steady_clock::now() - started > std::chrono::seconds(10)) {
      failures = 0;
    }
    const auto backoff =
        std::chrono::duration_cast<std::chrono::milliseconds>(reconnects.base(failures++));
    log::warn(
        "no connection to the container runtime; retrying",
        {{"socket", options_.socketPath}, {"error", s.toString()}, {"retryInMs", backoff.count()}});
    for (auto waited = std::chrono::milliseconds(0); waited < backoff && !stop.load();
         waited += std::chrono::milliseconds(50)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
}

}  // namespace ker::agent
