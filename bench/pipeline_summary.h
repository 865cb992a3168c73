#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

// The whole-pipeline benchmark's runs summarized: medians per cluster size, client QPS and
// variant, the targets judged, and the markdown report.
namespace ker::bench::pipeline {

// Groups runs (as `pipeline_bench run` writes them) by nodes, pods, client_qps,
// creating_clients and variant, in the order first seen. Each group holds its run count, the runs
// that timed out, every run's pods per second, and the median over its runs of each reported
// statistic (pods_per_second, p50_ms, p99_ms, max_ms, failed_binds_per_pod,
// scheduler_errors_per_pod, api_requests_per_pod, ever_unschedulable, each cpu_ms_per_pod entry;
// for the templates and classes variants also claims_per_second, claim_p50_ms, claim_p99_ms).
nlohmann::ordered_json summarize(const std::vector<nlohmann::ordered_json>& runs);

// One row {"nodes", "pods", "client_qps", "creating_clients", "variant", "verdicts"} per
// extender group: its targets against the group of the same size, QPS and creating clients
// (pods/s >= 1.3x DRA's, p99 <= half DRA's, kube-apiserver CPU per pod <= DRA's, failed binds <
// 1% of pods, pods/s >= half the no-claims ceiling; those whose other variant ran); and per classes
// group with a dra-classes or extender group beside it: its pods/s >= dra-classes', its p99 <=
// dra-classes', its pods/s >= 0.85x the extender's. Each verdict {"target", "measured", "met",
// "margin"}.
nlohmann::ordered_json judge(const nlohmann::ordered_json& summary);

// The tables and verdicts as markdown; the claim figures of the templates and classes variants
// in a table of their own. Below the main table, links to the plots bench/plot.py draws next to it
// (pipeline-pods-per-second.svg, pipeline-p99.svg).
std::string markdown(const nlohmann::ordered_json& summary, const nlohmann::ordered_json& verdicts,
                     const nlohmann::ordered_json& meta);

// The write-cost stage's files (pipeline_bench --mode write-cost, one per cluster size) as the
// table "kube-apiserver CPU per status write": nodes, kind, kube-apiserver ms, etcd ms and wall
// ms per write, the object's bytes in each of its two states. "" when there are none.
std::string writeCostMarkdown(const nlohmann::ordered_json& stages);

}  // namespace ker::bench::pipeline
