#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <string>

namespace ker::bench {

// API requests one user made, counted from the kube-apiserver's audit log (run.sh starts the
// server with a policy that logs the bench's extender and controller users at Metadata level).
struct RequestCount {
  size_t reads = 0;                      // get, list
  size_t writes = 0;                     // create, update, patch, delete
  std::map<std::string, size_t> byKind;  // "update extendedresources/status" -> n
};

// Requests of `user` received in [from, to]; watches are long-running streams, not per-event
// requests, and are left out.
RequestCount countRequests(const std::string& auditLog, const std::string& user,
                           std::chrono::system_clock::time_point from,
                           std::chrono::system_clock::time_point to);

}  // namespace ker::bench
