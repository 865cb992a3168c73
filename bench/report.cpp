#include "bench/report.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace ker::bench {

std::string probeLabel(int claims, bool constrained) {
  return std::to_string(claims) + (constrained ? "c" : "");
}

namespace {

using ojson = nlohmann::ordered_json;

std::string num(double v, int digits = 2) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// Milliseconds with the precision that matters at their scale.
std::string ms(double v) {
  return num(v, v < 1 ? 3 : v < 100 ? 2 : 0);
}

std::string kb(double bytes) {
  return bytes < 1048576 ? num(bytes / 1024, 1) + " KB" : num(bytes / 1048576, 1) + " MB";
}

// j[key], or an empty object when absent (a mode or stage that was not run).
const ojson& sub(const ojson& j, const char* key) {
  static const ojson empty = ojson::object();
  return j.is_object() && j.contains(key) ? j[key] : empty;
}

double d(const ojson& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_number() ? j[key].get<double>() : 0;
}

// A verb row's probe pod: claims per pod, "c" when every claim has a constraint.
bool constrained(const ojson& row) {
  return row.value("constrained", false);
}

std::string rowLabel(const ojson& row) {
  return probeLabel(row["claims_per_pod"].get<int>(), constrained(row));
}

// `measured` against an upper bound (or a lower bound when !atMost).
ojson target(const std::string& name, double measured, double bound, bool atMost,
             const std::string& unit) {
  const bool pass = atMost ? measured <= bound : measured >= bound;
  std::string margin;
  if (pass) {
    margin = atMost ? num((1 - measured / bound) * 100, 0) + "% under"
                    : num((measured / bound - 1) * 100, 0) + "% over";
  } else {
    margin = atMost ? num(measured / bound, 2) + "x the bound"
                    : num(measured / bound * 100, 0) + "% of the bound";
  }
  return {
      {"target", name},
      {"measured", measured},
      {"bound", bound},
      {"unit", unit},
      {"pass", pass},
      {"margin", margin},
      {"text", (pass ? "PASS " : "MISS ") + num(measured, 2) + " " + unit + " vs " +
                   (atMost ? "<= " : ">= ") + num(bound, 2) + " " + unit + " (" + margin + ")"}};
}

const ojson* largestCluster(const ojson& results) {
  const ojson* best = nullptr;
  for (const auto& c : results["clusters"]) {
    if (best == nullptr || c["nodes"].get<size_t>() > (*best)["nodes"].get<size_t>()) {
      best = &c;
    }
  }
  return best;
}

ojson judge(const ojson& results) {
  ojson targets = ojson::array();
  if (const ojson* c = largestCluster(results)) {
    const std::string at = std::to_string((*c)["nodes"].get<size_t>()) + " nodes";
    double filterP99 = 0, prioP99 = 0, filterRps = 1e18, listRatio = 0, listP99 = 0;
    double constrainedFilterP99 = 0;
    bool names = false, list = false;
    for (const auto& r : (*c)["verbs"]) {
      if (constrained(r)) {
        if (r["verb"] == "filter") {
          constrainedFilterP99 = std::max(constrainedFilterP99, d(sub(r, "c1"), "p99_ms"));
        }
      } else if (r["mode"] == "NodeNames" && r["verb"] == "filter") {
        names = true;
        filterP99 = std::max(filterP99, d(sub(r, "c1"), "p99_ms"));
        filterRps = std::min(filterRps, d(sub(r, "c8"), "rps"));
      } else if (r["mode"] == "NodeNames") {
        prioP99 = std::max(prioP99, d(sub(r, "c1"), "p99_ms"));
      } else if (r["verb"] == "filter") {
        list = true;
        listRatio = std::max(listRatio, d(r, "ratio_p99_to_floor"));
        listP99 = std::max(listP99, d(sub(r, "c1"), "p99_ms"));
      }
    }
    if (names) {
      targets.push_back(target("NodeNames filter p99, " + at, filterP99, 2, true, "ms"));
      targets.push_back(target("NodeNames prioritize p99, " + at, prioP99, 2, true, "ms"));
      targets.push_back(target("NodeNames filter req/s at concurrency 8, " + at, filterRps, 2000,
                               false, "req/s"));
      targets.push_back(target("extender peak RSS (VmHWM) with " + at + " and " +
                                   std::to_string((*c)["devices"].get<size_t>()) +
                                   " devices cached, NodeNames load",
                               d(sub(*c, "memory_after_nodenames"), "peak_mb"), 200, true, "MB"));
    }
    if (names && constrainedFilterP99 > 0) {
      // The same run's filter without constraints is the base, so load on the machine moves
      // both alike.
      targets.push_back(target("NodeNames filter p99 with a constraint on every claim / without, " +
                                   at + " (p99 " + ms(constrainedFilterP99) + " ms against " +
                                   ms(filterP99) + " ms)",
                               constrainedFilterP99 / std::max(filterP99, 1e-6), 2, true, "x"));
    }
    if (list) {
      targets.push_back(target(
          "NodeList filter p99 / transport floor p99, " + at + " (p99 " + ms(listP99) + " ms)",
          listRatio, 3, true, "x"));
    }
  }
  if (results.contains("bind")) {
    for (const auto& b : results["bind"]["batches"]) {
      targets.push_back(target(
          "bind API writes, " + std::to_string(b["claims_per_pod"].get<int>()) + " claim(s) / " +
              std::to_string(b["devices_per_pod"].get<int>()) + " device(s) per pod, concurrency " +
              std::to_string(b["concurrency"].get<int>()),
          d(b, "api_writes_per_bind_metric"), d(b, "write_budget_per_bind"), true, "writes"));
    }
  }
  if (results.contains("controller")) {
    const auto& c = results["controller"];
    if (c["done"].get<bool>()) {
      targets.push_back(
          target(std::to_string(c["pods"].get<size_t>()) + " releases by the controller",
                 d(c, "release_seconds"), 10, true, "s"));
    } else {
      targets.push_back({{"target", "1000 releases by the controller within 10 s"},
                         {"pass", false},
                         {"text", "NOT DONE: " + c.value("not_done", std::string("unknown"))}});
    }
  }
  return targets;
}

std::string markdown(const ojson& r) {
  std::ostringstream md;
  const auto& m = r["machine"];
  md << "# Extender benchmark\n\n"
     << "Run " << r["generated_at"].get<std::string>() << " on " << m["cores"].get<int>()
     << " cores (" << m.value("cpu", std::string("unknown CPU")) << "); "
     << m["note"].get<std::string>() << "; the 1-minute load average, which counts those "
     << "processes and anything else running, was " << num(d(m, "load_average_at_start"), 1)
     << " at the start and " << num(d(m, "load_average_at_end"), 1)
     << " at the end. Latencies are client-side, over HTTP/1.1 keep-alive "
     << "with the headers kube-scheduler's Go client sends (Accept-Encoding: gzip); "
     << "medians of the runs noted in latest.json.\n\n";

  md << "## Clusters\n\n"
     << "| nodes | devices | node object | nodes/s created | devices/s created | extender "
        "ready | RSS after sync | peak RSS NodeNames | peak RSS NodeList |\n"
     << "|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const auto& c : r["clusters"]) {
    const auto& p = c["population"];
    md << "| " << c["nodes"].get<size_t>() << " | " << c["devices"].get<size_t>() << " | "
       << kb(d(c, "node_object_bytes_avg")) << " | " << num(d(p, "nodes_per_second"), 0) << " | "
       << num(d(p, "devices_per_second"), 0) << " | " << num(d(c, "extender_ready_seconds"), 2)
       << " s | " << num(d(sub(c, "memory_after_sync"), "rss_mb"), 0) << " MB | "
       << num(d(sub(c, "memory_after_nodenames"), "peak_mb"), 0) << " MB | "
       << num(d(sub(c, "memory_after_nodelist"), "peak_mb"), 0) << " MB |\n";
  }

  md << "\n## filter and prioritize\n\n"
     << "c=1: one connection; c=8: eight. Floor: the same body sent to a cpp-httplib server "
        "(TCP_NODELAY) that only answers `{}`; stack floor: the same through the extender's own "
        "HTTP stack (`ker::HttpServer`) with a handler that only answers `{}`. DOM: "
        "`nlohmann::json::parse` of "
        "the body. Handler: the extender's own time per call (its request-duration "
        "histogram); CPU: the extender process's CPU time per call. Both at c=1, warm-ups "
        "included. Claims: 1, one k80; 2, a k80 and two of k80-or-p100; 1c, two k80s on one NUMA "
        "node; 2c, that and two of k80-or-p100 on different NUMA nodes (NodeNames only).\n\n"
     << "| nodes | mode | verb | claims | request | reply (wire) | p50 | p99 | floor p99 | "
        "p99/floor | stack floor p99 | DOM parse | p50/DOM | handler | CPU | req/s c=1 | req/s c=8 "
        "| floor req/s c=8 |\n"
     << "|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
        "\n";
  for (const auto& c : r["clusters"]) {
    for (const auto& v : c["verbs"]) {
      const auto& c1 = sub(v, "c1");
      md << "| " << v["nodes"].get<size_t>() << " | " << v["mode"].get<std::string>() << " | "
         << v["verb"].get<std::string>() << " | " << rowLabel(v) << " | "
         << kb(d(v, "request_bytes")) << " | " << kb(d(v, "reply_bytes")) << " ("
         << kb(d(v, "reply_wire_bytes")) << ") | " << ms(d(c1, "p50_ms")) << " ms | "
         << ms(d(c1, "p99_ms")) << " ms | " << ms(d(sub(v, "floor_c1"), "p99_ms")) << " ms | "
         << num(d(v, "ratio_p99_to_floor"), 1) << "x | "
         << ms(d(sub(v, "stack_floor_c1"), "p99_ms")) << " ms | " << ms(d(v, "dom_parse_ms"))
         << " ms | " << num(d(v, "ratio_p50_to_dom_parse"), 2) << "x | "
         << ms(d(c1, "handler_ms_mean")) << " ms | " << ms(d(c1, "extender_cpu_ms_per_call"))
         << " ms | " << num(d(c1, "rps"), 0) << " | " << num(d(sub(v, "c8"), "rps"), 0) << " | "
         << num(d(sub(v, "floor_c8"), "rps"), 0) << " |\n";
    }
  }
  // bench/plot.py draws it from latest.json into the same folder (run.sh runs it).
  md << "\n![extender p99 per call by cluster size, mode and verb](extender-p99.svg)\n";

  if (r.contains("bind")) {
    const auto& b = r["bind"];
    md << "\n## bind (" << b["nodes"].get<size_t>() << "-node cluster)\n\n"
       << "API requests counted twice: writes by the extender's own "
          "`extended_resource_scheduler_api_writes_total`, reads and writes from the "
          "kube-apiserver audit log (the extender runs as a user of its own). "
       << "Latencies, rates and requests per bind are medians of " << b.value("runs", size_t{1})
       << " runs; binds and failures are their totals.\n\n"
       << "| claims/pod | devices/pod | concurrency | binds | failed | p50 | p99 | binds/s | "
          "writes/bind | reads/bind (audit) | writes/bind (audit) | write budget |\n"
       << "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
    for (const auto& x : b["batches"]) {
      md << "| " << x["claims_per_pod"].get<int>() << " | " << x["devices_per_pod"].get<int>()
         << " | " << x["concurrency"].get<int>() << " | " << x["binds"].get<size_t>() << " | "
         << x["failed"].get<size_t>() << " | " << ms(d(x, "p50_ms")) << " ms | "
         << ms(d(x, "p99_ms")) << " ms | " << num(d(x, "rps"), 1) << " | "
         << num(d(x, "api_writes_per_bind_metric"), 2) << " | "
         << num(d(x, "api_reads_per_bind_audit"), 2) << " | "
         << num(d(x, "api_writes_per_bind_audit"), 2) << " | "
         << x["write_budget_per_bind"].get<int>() << " |\n";
    }
  }

  if (r.contains("controller")) {
    const auto& c = r["controller"];
    md << "\n## controller\n\n";
    if (c["done"].get<bool>()) {
      md << c["pods"].get<size_t>() << " bound pods (" << c["claims_bound"].get<size_t>()
         << " claims, " << c["devices_bound"].get<size_t>()
         << " devices) deleted at once (deletes took " << num(d(c, "delete_seconds"), 2)
         << " s): every claim Pending and every device Available after "
         << num(d(c, "release_seconds"), 2) << " s";
      if (c.contains("release_seconds_runs") && c["release_seconds_runs"].size() > 1) {
        md << " (the median run of " << c["release_seconds_runs"].size() << ":";
        const char* sep = " ";
        for (const auto& t : c["release_seconds_runs"]) {
          md << sep << num(t.get<double>(), 2) << " s";
          sep = ", ";
        }
        md << "; the rest are that run's figures)";
      }
      md << "; " << num(d(c, "api_reads_per_pod"), 2) << " reads and "
         << num(d(c, "api_writes_per_pod"), 2) << " writes per released pod (audit log).";
      if (c.contains("cpu_seconds") && !c["cpu_seconds"].empty()) {
        md << " CPU time meanwhile:";
        const char* sep = " ";
        for (const auto& [name, used] : c["cpu_seconds"].items()) {
          md << sep << name << " " << num(used.get<double>(), 2) << " s";
          sep = ", ";
        }
        md << " (" << num(d(c, "cores_busy"), 2) << " cores busy on average)";
      }
      md << "\n";
    } else {
      md << "NOT DONE: " << c.value("not_done", std::string("unknown")) << "\n";
    }
  }

  md << "\n## Targets\n\n| target | result |\n|---|---|\n";
  for (const auto& t : r["targets"]) {
    md << "| " << t["target"].get<std::string>() << " | " << t["text"].get<std::string>() << " |\n";
  }
  return md.str();
}

}  // namespace

std::string writeResults(ojson& results, const std::string& outDir) {
  results["targets"] = judge(results);
  std::filesystem::create_directories(outDir);
  std::ofstream(outDir + "/latest.json") << results.dump(2) << "\n";
  const std::string md = markdown(results);
  std::ofstream(outDir + "/latest.md") << md;
  return md;
}

}  // namespace ker::bench
