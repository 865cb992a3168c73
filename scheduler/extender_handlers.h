#pragma once

#include <string_view>

#include "common/http_message.h"
#include "common/metrics.h"
#include "scheduler/extender.h"

namespace ker {

// The extender's HTTP verbs as functions of the request body: decoding, the decision, the
// reply and the request metrics. No sockets here, so tests and the fuzzer drive them directly.
class ExtenderHandlers {
 public:
  ExtenderHandlers(Extender& extender, metrics::Registry& registry);

  HttpResponse filter(std::string_view body);
  HttpResponse prioritize(std::string_view body);
  HttpResponse bind(std::string_view body);

 private:
  template <class Fn>
  HttpResponse timed(const char* verb, Fn&& fn);

  Extender& extender_;
  metrics::CounterFamily& requests_;
  metrics::HistogramFamily& latency_;
  metrics::CounterFamily& decisions_;
};

}  // namespace ker
