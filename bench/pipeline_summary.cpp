#include "bench/pipeline_summary.h"

#include <cstdio>
#include <map>

#include "bench/http_load.h"

namespace ker::bench::pipeline {

using ojson = nlohmann::ordered_json;

namespace {

constexpr const char* kMedians[] = {"pods_per_second",
                                    "p50_ms",
                                    "p99_ms",
                                    "max_ms",
                                    "failed_binds_per_pod",
                                    "scheduler_errors_per_pod",
                                    "api_requests_per_pod",
                                    "ever_unschedulable",
                                    "create_seconds",
                                    "scheduling_attempt_ms_mean",
                                    "claims_per_second",
                                    "claim_p50_ms",
                                    "claim_p99_ms"};

std::string fmt(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// Runs written before the bench recorded its creating clients used 16.
int creatingClients(const ojson& run) {
  return run.value("creating_clients", 16);
}

std::string groupKey(const ojson& run) {
  return std::to_string(run.value("nodes", 0)) + "/" + std::to_string(run.value("pods", 0)) + "/" +
         run.value("client_qps", std::string("default")) + "/" +
         std::to_string(creatingClients(run)) + "/" + run.value("variant", std::string());
}

const ojson* findGroup(const ojson& summary, const ojson& like, const std::string& variant) {
  for (const auto& g : summary) {
    if (g["nodes"] == like["nodes"] && g["pods"] == like["pods"] &&
        g["client_qps"] == like["client_qps"] &&
        g["creating_clients"] == like["creating_clients"] && g["variant"] == variant) {
      return &g;
    }
  }
  return nullptr;
}

ojson verdict(const std::string& target, double measured, double bound, bool atLeast,
              const std::string& unit) {
  const bool met = atLeast ? measured >= bound : measured <= bound;
  std::string margin;
  if (bound != 0) {
    const double pct = (measured - bound) / bound * 100;
    margin = std::string(pct >= 0 ? "+" : "") + fmt(pct, 0) + "% against " + fmt(bound, 3) + unit;
  }
  return {{"target", target}, {"measured", measured}, {"met", met}, {"margin", margin}};
}

double apiserverMsPerPod(const ojson& group) {
  return group.contains("cpu_ms_per_pod") ? group["cpu_ms_per_pod"].value("kube-apiserver", 0.0)
                                          : 0.0;
}

}  // namespace

ojson summarize(const std::vector<ojson>& runs) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<const ojson*>> groups;
  for (const auto& r : runs) {
    const std::string key = groupKey(r);
    if (!groups.contains(key)) {
      order.push_back(key);
    }
    groups[key].push_back(&r);
  }
  ojson out = ojson::array();
  for (const auto& key : order) {
    const auto& members = groups[key];
    const ojson& first = *members.front();
    ojson g = {{"nodes", first.value("nodes", 0)},
               {"pods", first.value("pods", 0)},
               {"client_qps", first.value("client_qps", std::string("default"))},
               {"creating_clients", creatingClients(first)},
               {"variant", first.value("variant", std::string())},
               {"runs", members.size()}};
    size_t timedOut = 0;
    ojson rates = ojson::array();
    std::map<std::string, std::vector<double>> values;
    std::map<std::string, std::vector<double>> cpu;
    for (const ojson* r : members) {
      timedOut += r->value("timed_out", false) ? 1 : 0;
      rates.push_back(r->value("pods_per_second", 0.0));
      for (const char* k : kMedians) {
        if (r->contains(k) && (*r)[k].is_number()) {
          values[k].push_back((*r)[k].get<double>());
        }
      }
      if (r->contains("extender_calls") && (*r)["extender_calls"].contains("bind")) {
        values["extender_bind_ms_mean"].push_back(
            (*r)["extender_calls"]["bind"].value("ms_mean", 0.0));
      }
      if (r->contains("cpu_ms_per_pod")) {
        for (const auto& [proc, v] : (*r)["cpu_ms_per_pod"].items()) {
          cpu[proc].push_back(v.get<double>());
        }
      }
    }
    g["timed_out_runs"] = timedOut;
    g["pods_per_second_runs"] = rates;
    for (const char* k : kMedians) {
      if (!values[k].empty()) {
        g[k] = median(values[k]);
      }
    }
    if (!values["extender_bind_ms_mean"].empty()) {
      g["extender_bind_ms_mean"] = median(values["extender_bind_ms_mean"]);
    }
    ojson cpuOut = ojson::object();
    for (const auto& [proc, arr] : (*members.front())["cpu_ms_per_pod"].items()) {
      (void)arr;
      cpuOut[proc] = median(cpu[proc]);
    }
    g["cpu_ms_per_pod"] = cpuOut;
    out.push_back(std::move(g));
  }
  return out;
}

ojson judge(const ojson& summary) {
  ojson out = ojson::array();
  for (const auto& g : summary) {
    const bool classes = g["variant"] == "classes";
    if (g["variant"] != "extender" && !classes) {
      continue;
    }
    ojson row = {{"nodes", g["nodes"]},           {"pods", g["pods"]},
                 {"client_qps", g["client_qps"]}, {"creating_clients", g["creating_clients"]},
                 {"variant", g["variant"]},       {"verdicts", ojson::array()}};
    const double rate = g.value("pods_per_second", 0.0);
    if (classes) {
      // The class path against DRA's own mapping of an extended resource, and what asking in
      // resources (a claim made and recorded per pod) costs against a pre-created claim.
      if (const ojson* mapped = findGroup(summary, g, "dra-classes"); mapped != nullptr) {
        row["verdicts"].push_back(verdict("pods/s >= dra-classes'", rate,
                                          mapped->value("pods_per_second", 0.0), true, " pods/s"));
        row["verdicts"].push_back(verdict("p99 <= dra-classes'", g.value("p99_ms", 0.0),
                                          mapped->value("p99_ms", 0.0), false, " ms"));
      }
      if (const ojson* ext = findGroup(summary, g, "extender"); ext != nullptr) {
        row["verdicts"].push_back(verdict("pods/s >= 0.85x extender's", rate,
                                          ext->value("pods_per_second", 0.0) * 0.85, true,
                                          " pods/s"));
      }
      if (!row["verdicts"].empty()) {
        out.push_back(std::move(row));
      }
      continue;
    }
    const ojson* dra = findGroup(summary, g, "dra");
    const ojson* none = findGroup(summary, g, "no-claims");
    if (dra != nullptr) {
      row["verdicts"].push_back(verdict("pods/s >= 1.3x DRA's", rate,
                                        dra->value("pods_per_second", 0.0) * 1.3, true, " pods/s"));
      row["verdicts"].push_back(verdict("p99 <= half DRA's", g.value("p99_ms", 0.0),
                                        dra->value("p99_ms", 0.0) / 2, false, " ms"));
      // What the project's writes cost the shared API server, per pod placed.
      row["verdicts"].push_back(verdict("kube-apiserver CPU / pod <= DRA's", apiserverMsPerPod(g),
                                        apiserverMsPerPod(*dra), false, " ms"));
    }
    row["verdicts"].push_back(verdict(
        "failed binds < 1% of pods", g.value("failed_binds_per_pod", 0.0) * 100, 1.0, false, " %"));
    // Strictly below 1%: exactly 1% misses.
    auto& fb = row["verdicts"].back();
    fb["met"] = g.value("failed_binds_per_pod", 0.0) < 0.01;
    if (none != nullptr) {
      row["verdicts"].push_back(verdict("pods/s >= half the no-claims ceiling", rate,
                                        none->value("pods_per_second", 0.0) / 2, true, " pods/s"));
    }
    out.push_back(std::move(row));
  }
  return out;
}

std::string markdown(const ojson& summary, const ojson& verdicts, const ojson& meta) {
  std::string md = "# Whole-pipeline scheduling: this project vs DRA vs no claims\n\n";
  for (const auto& [k, v] : meta.items()) {
    md += "- " + k + ": " + (v.is_string() ? v.get<std::string>() : v.dump()) + "\n";
  }
  md +=
      "\n| nodes / pods | client QPS | creating clients | variant | runs | pods/s (median; each "
      "run) | p50 ms | p99 "
      "ms | creating the pods, s | failed binds / pod | scheduler errors / pod | pods ever "
      "unschedulable | API requests / pod | scheduling attempt ms (extender bind ms) | CPU ms / "
      "pod |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& g : summary) {
    std::string each;
    for (const auto& r : g["pods_per_second_runs"]) {
      each += std::string(each.empty() ? "" : ", ") + fmt(r.get<double>(), 1);
    }
    std::string cpu;
    for (const auto& [proc, v] : g["cpu_ms_per_pod"].items()) {
      if (v.get<double>() >= 0.05) {
        cpu += std::string(cpu.empty() ? "" : ", ") + proc + " " + fmt(v.get<double>(), 1);
      }
    }
    const size_t timedOut = g.value("timed_out_runs", size_t{0});
    md += std::string("| ") + std::to_string(g["nodes"].get<int>()) + " / " +
          std::to_string(g["pods"].get<int>()) + " | " + g["client_qps"].get<std::string>() +
          " | " + std::to_string(g["creating_clients"].get<int>()) + " | " +
          g["variant"].get<std::string>() + " | " + std::to_string(g["runs"].get<size_t>()) +
          (timedOut > 0 ? std::string(" (") + std::to_string(timedOut) + " timed out)" : "") +
          " | " + fmt(g.value("pods_per_second", 0.0), 1) + " (" + each + ") | " +
          fmt(g.value("p50_ms", 0.0), 0) + " | " + fmt(g.value("p99_ms", 0.0), 0) + " | " +
          fmt(g.value("create_seconds", 0.0), 1) + " | " +
          fmt(g.value("failed_binds_per_pod", 0.0), 3) + " | " +
          fmt(g.value("scheduler_errors_per_pod", 0.0), 3) + " | " +
          fmt(g.value("ever_unschedulable", 0.0), 0) + " | " +
          fmt(g.value("api_requests_per_pod", 0.0), 2) + " | " +
          fmt(g.value("scheduling_attempt_ms_mean", 0.0), 0) +
          (g.contains("extender_bind_ms_mean")
               ? std::string(" (") + fmt(g["extender_bind_ms_mean"].get<double>(), 0) + ")"
               : std::string()) +
          " | " + cpu + " |\n";
  }
  // bench/plot.py draws them from pipeline-latest.json into the same folder (pipeline.sh runs it).
  md +=
      "\n![pods/s per variant and size](pipeline-pods-per-second.svg)\n![p99 per variant and "
      "size](pipeline-p99.svg)\n";
  std::string generated;
  for (const auto& g : summary) {
    if (!g.contains("claims_per_second")) {
      continue;
    }
    generated += std::string("| ") + std::to_string(g["nodes"].get<int>()) + " / " +
                 std::to_string(g["pods"].get<int>()) + " | " + g["client_qps"].get<std::string>() +
                 " | " + g["variant"].get<std::string>() + " | " +
                 fmt(g["claims_per_second"].get<double>(), 1) + " | " +
                 fmt(g.value("claim_p50_ms", 0.0), 0) + " | " +
                 fmt(g.value("claim_p99_ms", 0.0), 0) + " | " + fmt(g.value("p50_ms", 0.0), 0) +
                 " | " + fmt(g.value("p99_ms", 0.0), 0) + " |\n";
  }
  if (!generated.empty()) {
    md +=
        "\n## Claims the controller makes (from a template, from a class)\n\nA ReplicaSet's pod "
        "counts from when the watch first sees it, any other from its create request.\n\n| "
        "nodes / pods | client QPS | variant | claims generated/s | pod -> claim recorded p50 ms "
        "| p99 ms | pod -> PodScheduled p50 ms | p99 ms |\n|---|---|---|---|---|---|---|---|\n" +
        generated;
  }
  if (!verdicts.empty()) {
    md += "\n## Targets (this project, default scoring)\n\n";
    for (const auto& row : verdicts) {
      md += std::string("- ") + std::to_string(row["nodes"].get<int>()) + " nodes / " +
            std::to_string(row["pods"].get<int>()) + " pods, client QPS " +
            row["client_qps"].get<std::string>() + ", " +
            std::to_string(row["creating_clients"].get<int>()) + " creating clients, " +
            row.value("variant", std::string("extender")) + ":";
      for (const auto& v : row["verdicts"]) {
        md += std::string(" ") + (v["met"].get<bool>() ? "PASS" : "MISS") + " " +
              v["target"].get<std::string>() + " (" + fmt(v["measured"].get<double>(), 3) +
              (v["margin"].get<std::string>().empty()
                   ? ""
                   : std::string("; ") + v["margin"].get<std::string>()) +
              ");";
      }
      md += "\n";
    }
  }
  return md;
}

std::string writeCostMarkdown(const ojson& stages) {
  std::string rows;
  for (const auto& stage : stages) {
    if (!stage.contains("kinds") || !stage["kinds"].is_array()) {
      continue;
    }
    for (const auto& k : stage["kinds"]) {
      std::string bytes;
      if (k.contains("object_bytes")) {
        for (const auto& [state, b] : k["object_bytes"].items()) {
          bytes += std::string(bytes.empty() ? "" : ", ") + state + " " +
                   std::to_string(b.get<size_t>());
        }
      }
      rows += "| " + std::to_string(stage.value("nodes", 0)) + " | " +
              k.value("kind", std::string()) + " | " +
              std::to_string(k.value("writes", size_t{0})) + " | " +
              fmt(k.value("apiserver_ms_per_write", 0.0), 2) + " | " +
              fmt(k.value("etcd_ms_per_write", 0.0), 2) + " | " +
              fmt(k.value("wall_ms_per_write", 0.0), 2) + " | " + bytes + " |\n";
    }
  }
  if (rows.empty()) {
    return "";
  }
  return "\n## kube-apiserver CPU per status write\n\nSequential status writes of one object "
         "each, neither the extender nor the controller running (no watch of this project's "
         "informers to serve).\n\n| nodes | kind | writes | kube-apiserver ms | etcd ms | wall ms "
         "| bytes |\n|---|---|---|---|---|---|---|\n" +
         rows;
}

}  // namespace ker::bench::pipeline
