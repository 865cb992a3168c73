#include "agent/agent_metrics.h"

namespace ker::agent {

AgentMetrics::AgentMetrics(metrics::Registry& r)
    : containers(r.counter(
          "extended_resource_agent_containers_total",
          "Container creations the runtime asked about, by result (injected: "
          "given its devices; emptied: its pod names no claims, and the device variables its "
          "image sets were emptied; untouched: its pod names no claims; "
          "refused).",
          {"result"})),
      refusals(r.counter("extended_resource_agent_refusals_total",
                         "Container creations refused, by reason.", {"reason"})),
      createLatency(r.histogram("extended_resource_agent_create_container_duration_seconds",
                                "Time the agent took to answer CreateContainer, by result.",
                                {"result"})),
      inventoryWrites(r.counter("extended_resource_agent_inventory_writes_total",
                                "ExtendedResource writes from the node file, by op (create, "
                                "update, delete) and result (success, exists, conflict, error).",
                                {"op", "result"})),
      healthChanges(r.counter("extended_resource_agent_health_changes_total",
                              "Health transitions written or reported, by what was done "
                              "(unhealthy, healthy, holder_warned).",
                              {"to"})),
      capacityWrites(r.counter("extended_resource_agent_capacity_writes_total",
                               "Writes of the node's capacity and allocatable for the "
                               "ExtendedResourceClasses, by result (success, error).",
                               {"result"})),
      evictions(r.counter("extended_resource_agent_evictions_total",
                          "Containers stopped because they started without the agent (it was "
                          "away while the runtime created them).")
                    .get()),
      nodeFileErrors(r.counter("extended_resource_agent_node_file_errors_total",
                               "Reads of the node file that failed (unreadable or invalid); the "
                               "last good file stays in force.")
                         .get()),
      runtimeConnects(r.counter("extended_resource_agent_runtime_connects_total",
                                "Registrations with the container runtime's NRI socket.")
                          .get()),
      runtimeConnected(r.gauge("extended_resource_agent_runtime_connected",
                               "1 while the agent is registered with the runtime.")
                           .get()),
      devices(r.gauge("extended_resource_agent_devices", "Devices the node file lists.").get()) {}

}  // namespace ker::agent
