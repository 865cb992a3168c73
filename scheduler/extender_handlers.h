#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/metrics.h"
#include "common/spliced_body.h"
#include "scheduler/extender.h"

namespace ker {

struct HttpReply {
  int status = 200;
  std::string body;
  std::vector<SplicedBody::Insert> inserts = {};  // slices of the request body, see SplicedBody
};

// The extender's HTTP verbs as functions of the request body: decoding, the decision, the
// reply and the request metrics. No sockets here, so tests and the fuzzer drive them directly.
class ExtenderHandlers {
 public:
  ExtenderHandlers(Extender& extender, metrics::Registry& registry);

  HttpReply filter(std::string_view body);
  HttpReply prioritize(std::string_view body);
  HttpReply bind(std::string_view body);

 private:
  template <class Fn>
  HttpReply timed(const char* verb, Fn&& fn);

  Extender& extender_;
  metrics::CounterFamily& requests_;
  metrics::HistogramFamily& latency_;
  metrics::CounterFamily& decisions_;
};

}  // namespace ker
