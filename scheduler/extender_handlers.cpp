#include "scheduler/extender_handlers.h"

#include <chrono>
#include <utility>

#include "common/logging.h"
#include "model/objects.h"

namespace ker {
namespace {

// With a charset parameter httplib leaves the reply uncompressed even when the client accepts
// gzip (kube-scheduler's Go client does): the extender is a sidecar on loopback, where gzip
// cost the extender ~110 ms of CPU per 35 MB NodeList reply and ~0.4 ms per 100 KB NodeNames
// reply.
HttpResponse jsonReply(int status, SplicedBody body) {
  return HttpResponse{status, "application/json; charset=utf-8", std::move(body)};
}

}  // namespace

ExtenderHandlers::ExtenderHandlers(Extender& extender, metrics::Registry& registry,
                                   std::function<bool()> synced)
    : extender_(extender),
      synced_(std::move(synced)),
      requests_(registry.counter("extended_resource_scheduler_requests_total",
                                 "Extender requests by verb and HTTP status code.",
                                 {"verb", "code"})),
      latency_(registry.histogram("extended_resource_scheduler_request_duration_seconds",
                                  "Time to answer an extender request, by verb.", {"verb"})),
      decisions_(registry.counter("extended_resource_scheduler_decisions_total",
                                  "Filter and preempt decisions per node, and bind outcomes.",
                                  {"verb", "result"})),
      refusals_(registry.counter("extended_resource_scheduler_filter_refusals_total",
                                 "Filter calls that passed no node, by why: claims_unresolvable, "
                                 "awaiting_claims, pinned_elsewhere, no_free_device.",
                                 {"reason"})) {}

template <class Fn>
HttpResponse ExtenderHandlers::timed(const char* verb, Fn&& fn) {
  const auto start = std::chrono::steady_clock::now();
  HttpResponse reply;
  try {
    reply = !synced_ || synced_()
                ? fn()
                : jsonReply(503, renderError(std::string(verb) +
                                             ": the extender's caches have not synced yet"));
  } catch (const WireError& e) {
    reply = jsonReply(400, renderError(std::string("bad ") + verb + " request: " + e.what()));
  } catch (const std::exception& e) {
    log::error("extender request failed", {{"verb", verb}, {"error", e.what()}});
    reply = jsonReply(500, renderError(std::string(verb) + " failed: " + e.what()));
  }
  latency_.labels({verb}).observe(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  requests_.labels({verb, std::to_string(reply.status)}).inc();
  return reply;
}

HttpResponse ExtenderHandlers::filter(std::string_view body) {
  return timed("filter", [&] {
    ExtenderArgs args = parseExtenderArgs(body);
    const FilterDecision decision = extender_.filter(args, std::chrono::steady_clock::now());
    const FilterReply& reply = decision.reply;
    decisions_.labels({"filter", "passed"}).inc(static_cast<double>(reply.passing.size()));
    if (decision.refusal) {
      refusals_.labels({toString(*decision.refusal)}).inc();
    }
    decisions_.labels({"filter", "failed"})
        .inc(static_cast<double>(reply.failed.size() + reply.failedUnresolvable.size()));
    return jsonReply(200, renderFilterReply(reply, args));
  });
}

HttpResponse ExtenderHandlers::prioritize(std::string_view body) {
  return timed("prioritize", [&] {
    ExtenderArgs args = parseExtenderArgs(body);
    return jsonReply(200, renderPriorities(extender_.prioritize(args), args.decodedNames.empty()));
  });
}

HttpResponse ExtenderHandlers::bind(std::string_view body) {
  return timed("bind", [&] {
    BindingArgs args = parseBindingArgs(body);
    const Status bound = extender_.bind(args);
    decisions_.labels({"bind", bound.ok() ? "bound" : "failed"}).inc();
    if (bound.ok()) {
      log::info("bound pod",
                {{"pod", objectKey(args.podNamespace, args.podName)}, {"node", args.node}});
    } else {
      log::warn("bind failed", {{"pod", objectKey(args.podNamespace, args.podName)},
                                {"node", args.node},
                                {"error", bound.message()}});
    }
    // The wire's error: empty when bound.
    return jsonReply(200, renderBindingReply(bound.message()));
  });
}

HttpResponse ExtenderHandlers::preempt(std::string_view body) {
  return timed("preempt", [&] {
    const PreemptionArgs args = parsePreemptionArgs(body);
    const std::vector<NodeVictims> kept = extender_.preemptVerb(args);
    decisions_.labels({"preempt", "kept"}).inc(static_cast<double>(kept.size()));
    decisions_.labels({"preempt", "dropped"})
        .inc(static_cast<double>(args.nodes.size() - kept.size()));
    return jsonReply(200, renderPreemptionResult(kept));
  });
}

}  // namespace ker
