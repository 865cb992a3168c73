#include "common/signals.h"

#include <pthread.h>
#include <signal.h>

namespace ker {

namespace {
sigset_t terminationSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}
}  // namespace

void blockTerminationSignals() {
  sigset_t set = terminationSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

void ignoreBrokenPipes() {
  signal(SIGPIPE, SIG_IGN);
}

int waitForTerminationSignal() {
  sigset_t set = terminationSignals();
  int sig = 0;
  while (sigwait(&set, &sig) != 0) {
  }
  return sig;
}

}  // namespace ker
