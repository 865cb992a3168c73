#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "nri/status.h"

namespace ker::agent {

// A second, short-lived registration with the container runtime that the agent makes as it
// stops, so that the runtime drops the agent's own connection before it lets another container
// operation through (RuntimeConnection::leave says why). On a thread of its own: connect,
// register as `<plugin>-leaving` subscribed to one rare event, answer Configure; then answer
// the runtime's Synchronize, holding its last part until release() says the agent's
// connection is closed, and close. A Synchronize that has not come by then is still answered,
// at once, whenever it comes until the object is destroyed (the agent's exit).
//
// Why this order: once containerd has configured a new plugin it asks for its plugin-sync
// lock, and from then on no container operation that has not taken containerd's side of that
// lock yet gets to NRI until the sync is over. With nothing under way it syncs at once, and
// while the Synchronize is held no NRI event is delivered at all; answering after the agent's
// connection closed has containerd add this plugin and drop the closed one in one step. While
// a container stop runs (the kubelet stopping the agent's own container, the usual case)
// containerd holds the sync back until the stop ends, which is after the agent exited; the
// operations that come in meanwhile wait, and the stop's own NRI event drops the closed plugin
// before they go on.
class LeavingRegistration {
 public:
  struct Options {
    std::string socketPath;
    std::string name;   // the agent's plugin name; registered with "-leaving" appended
    std::string index;  // its index
    // For connecting, registering and Configure together.
    std::chrono::milliseconds registerTimeout{std::chrono::seconds(1)};
    // How long release() waits for a Synchronize that has not come yet.
    std::chrono::milliseconds syncWait{500};
  };

  explicit LeavingRegistration(Options options);
  ~LeavingRegistration();  // releases, stops serving, and joins
  LeavingRegistration(const LeavingRegistration&) = delete;
  LeavingRegistration& operator=(const LeavingRegistration&) = delete;

  // Starts the thread. Call once.
  void start();
  // Whether Configure has been answered, or the registration failed (then registered() says
  // why); does not wait.
  bool settled() const;
  // Ok once Configure has been answered; the error that ended the registration otherwise.
  nri::Status registered() const;
  // Whether the runtime has begun its Synchronize. containerd holds its plugin-sync lock then,
  // which it takes only once no container operation is under way, and it delivers no NRI
  // event until the answer: nothing more can come to the agent's connection.
  bool synchronizing() const;
  // The agent's connection is closed: the last part of Synchronize may now be answered. Waits
  // up to syncWait for that answer: ok once given after this call; timedOut when no
  // Synchronize came in that time (containerd holds it back while a container stop runs, see
  // above; it is still answered if it comes later); notAllowed when the runtime's timeout made
  // it answer before this call; or the error that ended the registration.
  nri::Status release();

  // The name registered.
  std::string name() const { return options_.name + "-leaving"; }

 private:
  class Plugin;
  void run();
  // The thread's result: it stopped serving (registered_ too, when not set yet).
  void end(nri::Status s);

  Options options_;
  std::thread thread_;

  mutable std::mutex mu_;  // guards what follows
  std::condition_variable changed_;
  std::optional<nri::Status> registered_;  // set once Configure was answered or it failed
  bool syncStarted_ = false;               // a part of Synchronize came
  bool released_ = false;
  bool closing_ = false;              // the destructor runs: stop serving
  bool synchronized_ = false;         // the last part of Synchronize answered
  bool answeredEarly_ = false;        // ... before release(), at the runtime's timeout
  std::optional<nri::Status> ended_;  // the thread's result, once it stopped serving
};

}  // namespace ker::agent
