#pragma once

#include "common/metrics.h"

namespace ker {

// The controller's own series, registered once; references stay valid for the registry's
// lifetime.
struct ControllerMetrics {
  explicit ControllerMetrics(metrics::Registry& registry);

  metrics::CounterFamily& reconciles;          // {kind, result}
  metrics::CounterFamily& reconcileErrors;     // {kind}
  metrics::HistogramFamily& reconcileLatency;  // {kind}
  metrics::CounterFamily& releases;            // {cause}
  metrics::CounterFamily& repairs;             // {action}
  metrics::Counter& liveReads;
  metrics::Counter& podNudges;
};

}  // namespace ker
