#include "model/served_pods.h"

namespace ker {

bool servedPod(const Pod& pod, const std::string& schedulerName) {
  return schedulerName.empty() || pod.schedulerName == schedulerName;
}

}  // namespace ker
