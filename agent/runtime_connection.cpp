#include "agent/runtime_connection.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
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

// The plugin `leave` registers: subscribed to one rare event only (none would mean all), it
// answers the runtime's Configure and Synchronize and marks when each came (Synchronize's last
// part).
class LeavingPlugin : public nri::Plugin {
 public:
  nri::Status configure(const nri::ConfigureRequest&, nri::ConfigureResponse* resp) override {
    resp->set_events(nri::eventBit(nri::REMOVE_POD_SANDBOX));
    configured_ = true;
    return nri::Status::ok();
  }
  nri::Status synchronize(const nri::SynchronizeRequest& req,
                          nri::SynchronizeResponse* resp) override {
    resp->set_more(req.more());
    synchronized_ = !req.more();
    return nri::Status::ok();
  }
  bool configured() const { return configured_; }
  bool synchronized() const { return synchronized_; }

 private:
  bool configured_ = false;
  bool synchronized_ = false;
};

// Serves the session until done() or the deadline; ok once done(), timedOut at the deadline,
// or the session's error.
nri::Status serveUntil(nri::Session* session, const std::function<bool()>& done,
                       std::chrono::steady_clock::time_point deadline, const std::string& what) {
  while (!done()) {
    const auto left =
        std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      return nri::Status::timedOut("no " + what + " from the runtime in time");
    }
    if (nri::Status s = session->serve(std::min(left, std::chrono::milliseconds(200))); !s.isOk()) {
      return s;
    }
  }
  return nri::Status::ok();
}

}  // namespace

nri::Status RuntimeConnection::serveOnce(const std::atomic<bool>& stop) {
  int fd = -1;
  if (nri::Status s = connectUnix(options_.socketPath, &fd); !s.isOk()) {
    return s;
  }
  nri::PluginDispatcher dispatcher(plugin_);
  nri::Status s;
  bool stoppedWhileUp = false;
  {
    nri::Session session(fd, &dispatcher);
    s = nri::registerPlugin(&session, options_.pluginName, options_.pluginIndex,
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
    if (stop.load() && s.isOk()) {
      s = drain(&session);
      stoppedWhileUp = s.isOk();
    }
    connected_ = false;
    metrics_->runtimeConnected.set(0);
  }
  if (stoppedWhileUp) {
    if (nri::Status left = leave(); !left.isOk()) {
      log::warn(
          "could not have the container runtime drop the closed connection at once; it "
          "does at its next event",
          {{"socket", options_.socketPath}, {"error", left.toString()}});
    }
  }
  return stop.load() ? nri::Status::ok() : s;
}

nri::Status RuntimeConnection::drain(nri::Session* session) {
  using Clock = std::chrono::steady_clock;
  const auto started = Clock::now();
  auto quietSince = started;
  uint64_t served = session->servedRequests();
  while (Clock::now() - started < options_.drainLimit) {
    if (nri::Status s = session->serve(std::chrono::milliseconds(50)); !s.isOk()) {
      return s;
    }
    const auto now = Clock::now();
    if (session->servedRequests() != served || session->midMessage()) {
      served = session->servedRequests();
      quietSince = now;
    } else if (now - quietSince >= options_.drainQuiet) {
      return nri::Status::ok();
    }
  }
  log::warn("the container runtime was not quiet before the drain's limit; closing anyway",
            {{"socket", options_.socketPath},
             {"limitMs", static_cast<int64_t>(options_.drainLimit.count())}});
  return nri::Status::ok();
}

nri::Status RuntimeConnection::leave() {
  int fd = -1;
  if (nri::Status s = connectUnix(options_.socketPath, &fd); !s.isOk()) {
    return s;
  }
  LeavingPlugin leaving;
  nri::PluginDispatcher dispatcher(&leaving);
  nri::Session session(fd, &dispatcher);
  const std::string name = options_.pluginName + "-leaving";
  const auto started = std::chrono::steady_clock::now();
  nri::Status s = nri::registerPlugin(&session, name, options_.pluginIndex, options_.leaveTimeout);
  if (s.isOk()) {
    s = serveUntil(
        &session, [&] { return leaving.configured(); }, started + options_.leaveTimeout,
        "Configure");
  }
  if (!s.isOk()) {
    return s;
  }
  s = serveUntil(
      &session, [&] { return leaving.synchronized(); },
      std::chrono::steady_clock::now() + options_.leaveSyncWait, "Synchronize");
  if (s.code() == nri::Status::Code::kTimedOut) {
    // containerd holds back a new plugin's Synchronize while any container stop runs (the
    // kubelet's stop of the agent's own container among them), and with it every container
    // operation that comes after. Such a stop ends with an NRI event, which drops the closed
    // connection before any of them goes on.
    log::info(
        "the container runtime has not synchronized the leaving registration yet; a "
        "container stop under way drops the closed connection when it ends",
        {{"socket", options_.socketPath}, {"plugin", name}});
    return nri::Status::ok();
  }
  if (s.isOk()) {
    log::info("left the container runtime", {{"socket", options_.socketPath}, {"plugin", name}});
  }
  return s;
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
