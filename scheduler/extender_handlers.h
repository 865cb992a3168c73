#pragma once

#include <functional>
#include <string_view>

#include "common/http_message.h"
#include "common/metrics.h"
#include "scheduler/extender.h"

namespace ker {

// The extender's HTTP verbs as functions of the request body: decoding, the decision, the
// reply and the request metrics. No sockets here, so tests and the fuzzer drive them directly.
class ExtenderHandlers {
 public:
  // Unless `synced` says so (it may wait a while for the caches first), every verb answers 503
  // with an Error: the devices a claim holds are known only once the claim cache has listed
  // them. Unset: always served.
  ExtenderHandlers(Extender& extender, metrics::Registry& registry,
                   std::function<bool()> synced = {});

  HttpResponse filter(std::string_view body);
  HttpResponse prioritize(std::string_view body);
  HttpResponse bind(std::string_view body);
  HttpResponse preempt(std::string_view body);

 private:
  template <class Fn>
  HttpResponse timed(const char* verb, Fn&& fn);

  Extender& extender_;
  std::function<bool()> synced_;
  metrics::CounterFamily& requests_;
  metrics::HistogramFamily& latency_;
  metrics::CounterFamily& decisions_;
  metrics::CounterFamily& refusals_;
};

}  // namespace ker
