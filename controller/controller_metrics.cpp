#include "controller/controller_metrics.h"

namespace ker {

ControllerMetrics::ControllerMetrics(metrics::Registry& r)
    : reconciles(r.counter("extended_resource_controller_reconciles_total",
                           "Reconciles by kind (claim, device, nudge) and result (success, "
                           "requeue, conflict, error, aborted).",
                           {"kind", "result"})),
      reconcileErrors(r.counter("extended_resource_controller_reconcile_errors_total",
                                "Reconciles that failed and were retried with backoff.", {"kind"})),
      reconcileLatency(r.histogram("extended_resource_controller_reconcile_duration_seconds",
                                   "Time spent in one reconcile.", {"kind"})),
      releases(r.counter("extended_resource_controller_releases_total",
                         "Claims released, by cause.", {"cause"})),
      repairs(r.counter("extended_resource_controller_repairs_total",
                        "Other status writes: orphan devices freed, claims marked Lost, device "
                        "statuses initialized.",
                        {"action"})),
      liveReads(r.counter("extended_resource_controller_live_reads_total",
                          "GETs made to confirm what the cache showed before acting on it.")
                    .get()),
      podNudges(r.counter("extended_resource_controller_pod_nudges_total",
                          "Pending pods annotated so kube-scheduler retries them.")
                    .get()) {}

}  // namespace ker
