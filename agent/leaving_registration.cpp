#include "agent/leaving_registration.h"

#include <algorithm>
#include <system_error>

#include "common/logging.h"
#include "nri/plugin_service.h"
#include "nri/session.h"
#include "nri/unix_socket.h"

namespace ker::agent {

namespace {
using Clock = std::chrono::steady_clock;

// What is left of the runtime's request timeout when a held Synchronize is answered anyway:
// the answer must reach it before the timeout closes the registration.
constexpr std::chrono::milliseconds kAnswerMargin{500};
// containerd's plugin_request_timeout when Configure names none.
constexpr std::chrono::milliseconds kDefaultRequestTimeout{2000};
}  // namespace

// Subscribes to one rare event (none would mean all) and holds the last part of Synchronize
// until release() or the runtime's request timeout is near.
class LeavingRegistration::Plugin : public nri::Plugin {
 public:
  explicit Plugin(LeavingRegistration* owner) : owner_(owner) {}

  nri::Status configure(const nri::ConfigureRequest& req, nri::ConfigureResponse* resp) override {
    resp->set_events(nri::eventBit(nri::REMOVE_POD_SANDBOX));
    if (req.request_timeout() > 0) {
      requestTimeout_ = std::chrono::milliseconds(req.request_timeout());
    }
    configured_ = true;
    // Registered from here on, whatever the serving loop does next (a Synchronize may come
    // before it looks).
    {
      std::lock_guard lock(owner_->mu_);
      if (!owner_->registered_) {
        owner_->registered_ = nri::Status::ok();
      }
    }
    owner_->changed_.notify_all();
    return nri::Status::ok();
  }
  bool configured() const { return configured_; }

  nri::Status synchronize(const nri::SynchronizeRequest& req,
                          nri::SynchronizeResponse* resp) override {
    // containerd's timeout covers every part of one Synchronize.
    if (!syncStarted_) {
      syncStarted_ = Clock::now();
      std::lock_guard lock(owner_->mu_);
      owner_->syncStarted_ = true;
    }
    resp->set_more(req.more());
    if (req.more()) {
      return nri::Status::ok();
    }
    const auto answerBy =
        *syncStarted_ + std::max(requestTimeout_ - kAnswerMargin, std::chrono::milliseconds(0));
    std::unique_lock lock(owner_->mu_);
    const bool released =
        owner_->changed_.wait_until(lock, answerBy, [this] { return owner_->released_; });
    owner_->synchronized_ = true;
    owner_->answeredEarly_ = !released;
    owner_->changed_.notify_all();
    return nri::Status::ok();
  }

 private:
  LeavingRegistration* owner_;
  bool configured_ = false;
  std::chrono::milliseconds requestTimeout_ = kDefaultRequestTimeout;
  std::optional<Clock::time_point> syncStarted_;
};

LeavingRegistration::LeavingRegistration(Options options) : options_(std::move(options)) {}

LeavingRegistration::~LeavingRegistration() {
  {
    std::lock_guard lock(mu_);
    released_ = true;
    closing_ = true;
  }
  changed_.notify_all();
  if (thread_.joinable()) {
    thread_.join();
  }
}

void LeavingRegistration::start() {
  // Nothing escapes the thread, or its start: the agent's stop goes on without the
  // registration.
  try {
    thread_ = std::thread([this] {
      try {
        run();
      } catch (const std::exception& e) {
        end(nri::Status::ioError(std::string("leaving registration: ") + e.what()));
      }
    });
  } catch (const std::system_error& e) {
    end(nri::Status::ioError(std::string("leaving registration thread: ") + e.what()));
  }
}

void LeavingRegistration::end(nri::Status s) {
  std::lock_guard lock(mu_);
  if (!registered_) {
    registered_ = s;
  }
  ended_ = std::move(s);
  changed_.notify_all();
}

bool LeavingRegistration::settled() const {
  std::lock_guard lock(mu_);
  return registered_.has_value();
}

bool LeavingRegistration::synchronizing() const {
  std::lock_guard lock(mu_);
  return syncStarted_;
}

nri::Status LeavingRegistration::registered() const {
  std::lock_guard lock(mu_);
  return registered_.value_or(nri::Status::timedOut("not registered yet"));
}

nri::Status LeavingRegistration::release() {
  std::unique_lock lock(mu_);
  released_ = true;
  changed_.notify_all();
  changed_.wait_for(lock, options_.syncWait, [this] { return synchronized_ || ended_; });
  if (synchronized_) {
    return answeredEarly_ ? nri::Status::notAllowed(
                                "answered Synchronize before the agent's connection closed, at "
                                "the runtime's request timeout")
                          : nri::Status::ok();
  }
  if (ended_) {
    return *ended_;
  }
  if (!thread_.joinable()) {
    return nri::Status::notAllowed("never started");
  }
  return nri::Status::timedOut("no Synchronize from the runtime in " +
                               std::to_string(options_.syncWait.count()) + " ms");
}

void LeavingRegistration::run() {
  const auto deadline = Clock::now() + options_.registerTimeout;
  const auto finish = [this](nri::Status s) { end(std::move(s)); };
  int fd = -1;
  if (nri::Status s = nri::connectUnix(options_.socketPath, &fd); !s.isOk()) {
    return finish(s);
  }
  Plugin plugin(this);
  nri::PluginDispatcher dispatcher(&plugin);
  nri::Session session(fd, &dispatcher);
  const auto left = [&] {
    return std::max(std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()),
                    std::chrono::milliseconds(1));
  };
  nri::Status s = nri::registerPlugin(&session, name(), options_.index, left());
  // containerd may answer RegisterPlugin before it sends Configure.
  while (s.isOk() && !plugin.configured()) {
    s = Clock::now() < deadline ? session.serve(std::min(left(), std::chrono::milliseconds(50)))
                                : nri::Status::timedOut("no Configure from the runtime in time");
  }
  if (!s.isOk()) {
    return finish(s);
  }
  // Until Synchronize was answered, or the destructor; a Synchronize handler blocks inside
  // serve until release().
  for (;;) {
    {
      std::lock_guard lock(mu_);
      if (synchronized_ || closing_) {
        break;
      }
    }
    if (s = session.serve(std::chrono::milliseconds(50)); !s.isOk()) {
      return finish(s);
    }
  }
  finish(nri::Status::ok());
}

}  // namespace ker::agent
