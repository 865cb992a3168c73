#include "agent/runtime_connection.h"

#include <algorithm>
#include <functional>
#include <thread>

#include "agent/leaving_registration.h"
#include "common/backoff.h"
#include "common/logging.h"
#include "nri/unix_socket.h"

namespace ker::agent {

namespace {

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
    if (nri::Status s = session->serve(std::min(left, std::chrono::milliseconds(50))); !s.isOk()) {
      return s;
    }
  }
  return nri::Status::ok();
}

}  // namespace

nri::Status RuntimeConnection::serveOnce(const std::atomic<bool>& stop) {
  int fd = -1;
  if (nri::Status s = nri::connectUnix(options_.socketPath, &fd); !s.isOk()) {
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
  if (stop.load() && s.isOk()) {
    s = leave(&session);
  }
  connected_ = false;
  metrics_->runtimeConnected.set(0);
  return stop.load() ? nri::Status::ok() : s;
}

nri::Status RuntimeConnection::leave(nri::Session* session) {
  leaving_ = std::make_unique<LeavingRegistration>(
      LeavingRegistration::Options{.socketPath = options_.socketPath,
                                   .name = options_.pluginName,
                                   .index = options_.pluginIndex,
                                   .registerTimeout = options_.leaveTimeout,
                                   .syncWait = options_.leaveSyncWait});
  LeavingRegistration& leaving = *leaving_;
  leaving.start();
  // Answering meanwhile: the runtime may be asking this connection while the other registers.
  nri::Status s = serveUntil(
      session, [&] { return leaving.settled(); },
      std::chrono::steady_clock::now() + options_.leaveTimeout + std::chrono::milliseconds(100),
      "leaving registration");
  if (s.isOk() || s.code() == nri::Status::Code::kTimedOut) {
    if (const nri::Status registered = leaving.registered(); !registered.isOk()) {
      log::warn(
          "could not register the leaving plugin (yet); the container runtime drops the closed "
          "connection at its next event",
          {{"socket", options_.socketPath}, {"error", registered.toString()}});
    }
    s = drain(session, [&] { return leaving.synchronizing(); });
  }
  // Closed in every case, a broken connection too, before the leaving plugin's Synchronize is
  // answered: the runtime keeps a plugin whose connection is still open beside the new one.
  if (nri::Status hung = session->hangUp(options_.hangUpTimeout); !hung.isOk()) {
    log::warn("the container runtime did not close the agent's connection in time",
              {{"socket", options_.socketPath}, {"error", hung.toString()}});
  }
  // containerd marks the plugin closed just after it closes the connection, on another of its
  // threads; the Synchronize answer must find it marked.
  std::this_thread::sleep_for(options_.closeSettle);
  const nri::Status left = leaving.release();
  if (left.isOk()) {
    log::info("left the container runtime",
              {{"socket", options_.socketPath}, {"plugin", leaving.name()}});
  } else if (left.code() == nri::Status::Code::kTimedOut) {
    log::info(
        "the container runtime has not synchronized the leaving registration yet; it is "
        "answered when it comes, and a container stop under way drops the closed connection "
        "when it ends",
        {{"socket", options_.socketPath}, {"plugin", leaving.name()}});
  } else {
    log::warn("the leaving registration did not complete",
              {{"socket", options_.socketPath}, {"error", left.toString()}});
  }
  return s;
}

nri::Status RuntimeConnection::drain(nri::Session* session,
                                     const std::function<bool()>& runtimeHeld) {
  using Clock = std::chrono::steady_clock;
  const auto started = Clock::now();
  auto quietSince = started;
  uint64_t served = session->servedRequests();
  while (Clock::now() - started < options_.drainLimit) {
    if (nri::Status s = session->serve(std::chrono::milliseconds(50)); !s.isOk()) {
      return s;
    }
    const auto now = Clock::now();
    if (session->midMessage()) {
      quietSince = now;
    } else if (runtimeHeld()) {
      return nri::Status::ok();
    } else if (session->servedRequests() != served) {
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
