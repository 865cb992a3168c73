#pragma once

#include "common/metrics.h"

namespace ker::agent {

// The node agent's own series; the registry also carries the HTTP server's and a few read at
// render time (see AgentApp).
struct AgentMetrics {
  explicit AgentMetrics(metrics::Registry& r);

  metrics::CounterFamily& containers;       // {result}: injected, untouched, refused
  metrics::CounterFamily& refusals;         // {reason}
  metrics::HistogramFamily& createLatency;  // {result}
  metrics::CounterFamily& inventoryWrites;  // {op, result}
  metrics::CounterFamily& healthChanges;    // {to}: unhealthy, healthy, holder_warned
  metrics::CounterFamily& capacityWrites;   // {result}: success, error
  metrics::Counter& evictions;              // containers stopped for starting without the agent
  metrics::Counter& nodeFileErrors;
  metrics::Counter& runtimeConnects;
  metrics::Gauge& runtimeConnected;
  metrics::Gauge& devices;
};

}  // namespace ker::agent
