// extended-resource-scheduler: the scheduler extender that kube-scheduler calls to filter,
// prioritize and bind pods that claim devices.
#include <cstdio>
#include <exception>

#include "common/flags.h"
#include "common/kube_client.h"
#include "common/logging.h"
#include "common/signals.h"
#include "scheduler/extender_app.h"
#include "scheduler/extender_flags.h"

int main(int argc, char** argv) {
  ker::blockTerminationSignals();
  ker::ignoreBrokenPipes();
  ker::FlagSet flags("extended-resource-scheduler",
                     "Scheduler extender that allocates ExtendedResources to the claims of pods "
                     "scheduled by the extended-resource-scheduler profile.");
  const ker::ExtenderFlags extenderFlags(flags);
  if (auto r = flags.parse(argc, argv); r.status != ker::FlagParseResult::kOk) {
    r.print();
    return r.exitCode();
  }
  ker::ExtenderSettings settings;
  if (ker::Status s = extenderFlags.settings(settings); !s.ok()) {
    std::fprintf(stderr, "invalid flags: %s\n", s.message().c_str());
    return 2;
  }
  ker::log::init(settings.log.format, settings.log.verbosity);

  try {
    ker::KubeClient api(ker::KubeConfig::load(settings.kubeconfig));
    ker::ExtenderApp app(api, settings.extender);
    app.start();
    int sig = ker::waitForTerminationSignal();
    ker::log::info("shutting down", {{"signal", sig}});
    app.stop();
  } catch (const std::exception& e) {
    ker::log::error("fatal", {{"error", e.what()}});
    return 1;
  }
  return 0;
}
