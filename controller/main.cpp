// extended-resource-controller: releases the claims of deleted or finished pods, marks claims
// Lost when their devices go, and repairs what an interrupted bind left behind.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <exception>

#include "common/flags.h"
#include "common/kube_client.h"
#include "common/logging.h"
#include "common/signals.h"
#include "controller/controller_app.h"
#include "controller/controller_flags.h"

int main(int argc, char** argv) {
  ker::blockTerminationSignals();
  ker::ignoreBrokenPipes();
  ker::FlagSet flags("extended-resource-controller",
                     "Reconciles ExtendedResources and ExtendedResourceClaims with the pods that "
                     "hold them.");
  const ker::ControllerFlags controllerFlags(flags);
  if (auto r = flags.parse(argc, argv); r.status != ker::FlagParseResult::kOk) {
    r.print();
    return r.exitCode();
  }
  ker::ControllerSettings settings;
  if (ker::Status s = controllerFlags.settings(settings); !s.ok()) {
    std::fprintf(stderr, "invalid flags: %s\n", s.message().c_str());
    return 2;
  }
  ker::log::init(settings.log.format, settings.log.verbosity);

  try {
    ker::KubeClient api(ker::KubeConfig::load(settings.kubeconfig));
    // Losing the lease ends the process like a termination signal, but with a failure code.
    ker::ControllerApp app(api, settings.app, [] { ::kill(::getpid(), SIGTERM); });
    app.start();
    int sig = ker::waitForTerminationSignal();
    const bool lost = app.leadershipLost();
    ker::log::info("shutting down", {{"signal", sig}, {"leadershipLost", lost}});
    app.stop();
    return lost ? 1 : 0;
  } catch (const std::exception& e) {
    ker::log::error("fatal", {{"error", e.what()}});
    return 1;
  }
}
