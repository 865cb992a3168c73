#include "controller/controller_flags.h"

#include <utility>

#include "common/flag_checks.h"
#include "model/resource_class.h"

namespace ker {

namespace {

constexpr int64_t kMaxWorkers = 1024;
// The only lock component-base offers today; the flag exists for its name's sake.
constexpr const char* kResourceLock = "leases";

// "--<a> must be below --<b>, got 10s and 10s".
Status checkBelow(std::string_view a, std::chrono::milliseconds va, std::string_view b,
                  std::chrono::milliseconds vb) {
  if (va < vb) {
    return {};
  }
  return Status::invalid("--" + std::string(a) + " must be below --" + std::string(b) + ", got " +
                         formatDuration(va) + " and " + formatDuration(vb));
}

}  // namespace

ControllerAppConfig controllerBinaryDefaults() {
  ControllerAppConfig c;
  c.controller.reconciler.protectInUse = true;
  c.controller.classParamsNamespace = "extended-resource-classes";
  return c;
}

// Registration order is --help's.
ControllerFlags::ControllerFlags(FlagSet& flags, const ControllerAppConfig& d)
    : kubeconfig_(addKubeconfigFlag(flags)),
      workers_(
          flags.addInt("workers", d.controller.workers, "concurrent claim reconciles (releases)")),
      deviceWorkers_(flags.addInt("device-workers", d.controller.deviceWorkers,
                                  "concurrent device reconciles")),
      resyncPeriod_(flags.addDuration("resync-period", d.resyncPeriod,
                                      "how often every claim and device is reconciled again")),
      orphanGrace_(
          flags.addDuration("orphan-grace-period", d.controller.reconciler.orphanGrace,
                            "how long a half-written bind may stay so before it is repaired; "
                            "keep it above the extender's --bind-deadline, as it also bounds "
                            "--device-orphan-grace-period")),
      deviceOrphanGrace_(flags.addDuration(
          "device-orphan-grace-period", d.controller.reconciler.deviceOrphanGrace,
          "the same for a device Bound to a claim that does not list it (the smaller of the two "
          "applies); keep it above the extender's --bind-deadline. Also how long a free device's "
          "node may lack a Node object before the device is taken out of offer")),
      freedDeviceWriteDelay_(flags.addDuration(
          "freed-device-write-delay", d.controller.reconciler.freedDeviceWriteDelay,
          "how long after a claim's release its devices, which its status already frees for "
          "every bind, wait before they are written Available too (what kubectl get er shows)")),
      protectInUse_(flags.addBool(
          "protect-in-use", d.controller.reconciler.protectInUse,
          "put the protection finalizers on claims and devices, so one deleted while a pod holds "
          "it stays until that pod is gone (the ClusterRole must allow patching them); false "
          "leaves deletions alone, taking the finalizer off whatever is being deleted")),
      schedulerName_(flags.addString("scheduler-name", d.controller.reconciler.schedulerName,
                                     "schedulerName of the pods whose claims are served")),
      classParams_(flags.addString(
          "class-params-namespace", d.controller.classParamsNamespace,
          "the Namespace whose annotation " + std::string(kClassParamsAnnotation) +
              " the class admission policies read: the leader keeps it listing the extended "
              "resource names the classes serve (the Namespace is deployed, never created); \"\" "
              "keeps none")),
      leaderElect_(
          flags.addBool("leader-elect", d.leaderElect, "run only while holding the lease")),
      leaseName_(flags.addString("leader-elect-lease-name", d.leaderElection.name, "Lease name")),
      leaseNamespace_(
          flags.addString("leader-elect-namespace", d.leaderElection.ns, "Lease namespace")),
      resourceLock_(flags.addString("leader-elect-resource-lock", kResourceLock,
                                    "the lock object (only leases, as component-base)")),
      leaseDuration_(flags.addDuration("leader-elect-lease-duration",
                                       d.leaderElection.leaseDuration,
                                       "how long others wait after they last saw it renewed")),
      renewDeadline_(flags.addDuration("leader-elect-renew-deadline",
                                       d.leaderElection.renewDeadline,
                                       "give up leading when not renewed for this long")),
      retryPeriod_(flags.addDuration("leader-elect-retry-period", d.leaderElection.retryPeriod,
                                     "between acquire and renew attempts")),
      metricsBindAddress_(flags.addString("metrics-bind-address", d.metricsBindAddress,
                                          "host:port for /healthz, /readyz, /metrics (0: off)")),
      admissionPolicy_(flags,
                       {kAllocationPolicyName, kClassQuotaPolicyName, kClassNamesPolicyName}),
      log_(flags) {
  // component-base's names for the same two settings.
  flags.addAlias("leader-elect-resource-name", "leader-elect-lease-name");
  flags.addAlias("leader-elect-resource-namespace", "leader-elect-namespace");
}

Status ControllerFlags::settings(ControllerSettings& out) const {
  ControllerSettings s;
  if (Status st = log_.settings(s.log); !st.ok()) {
    return st;
  }
  if (Status st = admissionPolicy_.settings(s.app.admissionPolicy); !st.ok()) {
    return st;
  }
  if (*resourceLock_ != kResourceLock) {
    return Status::invalid("--leader-elect-resource-lock must be leases, got \"" + *resourceLock_ +
                           "\"");
  }
  for (Status st : {checkFlagRange("workers", *workers_, 1, kMaxWorkers),
                    checkFlagRange("device-workers", *deviceWorkers_, 1, kMaxWorkers),
                    checkFlagBindAddress("metrics-bind-address", *metricsBindAddress_),
                    // 0 would repair every bind in flight between its claim write and its Binding.
                    checkFlagPositive("orphan-grace-period", *orphanGrace_),
                    checkFlagPositive("device-orphan-grace-period", *deviceOrphanGrace_),
                    checkFlagPositive("freed-device-write-delay", *freedDeviceWriteDelay_),
                    checkFlagPositive("leader-elect-retry-period", *retryPeriod_),
                    checkBelow("leader-elect-retry-period", *retryPeriod_,
                               "leader-elect-renew-deadline", *renewDeadline_),
                    checkBelow("leader-elect-renew-deadline", *renewDeadline_,
                               "leader-elect-lease-duration", *leaseDuration_)}) {
    if (!st.ok()) {
      return st;
    }
  }
  s.kubeconfig = *kubeconfig_;
  ControllerAppConfig& c = s.app;
  c.controller.classParamsNamespace = *classParams_;
  c.controller.workers = static_cast<int>(*workers_);
  c.controller.deviceWorkers = static_cast<int>(*deviceWorkers_);
  c.controller.reconciler.orphanGrace = *orphanGrace_;
  c.controller.reconciler.deviceOrphanGrace = *deviceOrphanGrace_;
  c.controller.reconciler.freedDeviceWriteDelay = *freedDeviceWriteDelay_;
  c.controller.reconciler.schedulerName = *schedulerName_;
  c.controller.reconciler.protectInUse = *protectInUse_;
  c.resyncPeriod = *resyncPeriod_;
  c.leaderElect = *leaderElect_;
  c.leaderElection.name = *leaseName_;
  c.leaderElection.ns = *leaseNamespace_;
  c.leaderElection.leaseDuration = *leaseDuration_;
  c.leaderElection.renewDeadline = *renewDeadline_;
  c.leaderElection.retryPeriod = *retryPeriod_;
  c.metricsBindAddress = *metricsBindAddress_;
  out = std::move(s);
  return {};
}

}  // namespace ker
