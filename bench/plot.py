#!/usr/bin/env python3
"""Draws the benchmarks' results as SVG bar charts, next to their tables.

    bench/plot.py [DIR]      (default: bench/results)

Reads DIR/pipeline-latest.json (its "summary": one entry per nodes/pods/client QPS/creating
clients and variant, with the medians pods_per_second and p99_ms; when the JSON lacks them, the table of
DIR/pipeline-latest.md) and writes

    DIR/pipeline-pods-per-second.svg   pods scheduled per second, per variant and size
    DIR/pipeline-p99.svg               p99 from pod creation to PodScheduled, in seconds
                                       (log scale when the values span more than 20x)

grouped bars per cluster size, one colour per variant, the value on each bar; and from the
extender microbench's DIR/latest.json, when there is one,

    DIR/extender-p99.svg               p99 per call at one connection, per cluster size and
                                       mode/verb (the fewest claims per pod measured)

The markdown pipeline_bench and extender_bench write links them; bench/pipeline.sh and
bench/run.sh run this after writing the JSON. Standard library only: the SVG is written by hand.
"""

import json
import math
import os
import re
import sys
from xml.sax.saxutils import escape

VARIANTS = {  # name: (legend label, colour)
    "extender": ("extender (this project)", "#1f77b4"),
    "dra": ("Kubernetes DRA", "#ff7f0e"),
    "no-claims": ("no claims (ceiling)", "#7f7f7f"),
    "templates": ("claim templates", "#9467bd"),
}
SPARE_COLOURS = ["#2ca02c", "#d62728", "#8c564b", "#e377c2", "#bcbd22", "#17becf"]
FONT = "font-family=\"DejaVu Sans, Arial, Helvetica, sans-serif\""


def read_summary(directory):
    """[{nodes, pods, client_qps, variant, pods_per_second, p99_ms}] from the JSON, or the
    markdown table when the JSON has no figures."""
    path = os.path.join(directory, "pipeline-latest.json")
    rows = []
    if os.path.exists(path):
        with open(path) as f:
            rows = json.load(f).get("summary", [])
    rows = [r for r in rows if "pods_per_second" in r and "p99_ms" in r]
    if rows:
        return rows
    return read_markdown(os.path.join(directory, "pipeline-latest.md"))


def read_markdown(path):
    rows = []
    # Columns by their header, so tables written before "creating clients" read as well.
    column = {}
    with open(path) as f:
        for line in f:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if cells[0] == "nodes / pods":
                # The main table's header; the others' (claims generated) end its rows.
                column = {name: i for i, name in enumerate(cells)}
                if "pods/s (median; each run)" not in column:
                    column = {}
                continue
            m = re.match(r"^(\d+) / (\d+)$", cells[0]) if len(cells) >= 7 else None
            if not m or not column:
                continue
            clients = column.get("creating clients")
            rows.append({"nodes": int(m.group(1)), "pods": int(m.group(2)),
                         "client_qps": cells[column["client QPS"]],
                         "creating_clients": int(cells[clients]) if clients else 16,
                         "variant": cells[column["variant"]],
                         "pods_per_second":
                             float(cells[column["pods/s (median; each run)"]].split()[0]),
                         "p99_ms": float(cells[column["p99 ms"]])})
    if not rows:
        raise SystemExit("no results in %s" % path)
    return rows


def fmt_number(v):
    return "%.0f" % v if v >= 10 else "%.1f" % v if v >= 1 else "%.2f" % v


def nice_step(span, count=5):
    raw = span / count
    mag = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 2.5, 5, 10):
        if raw <= m * mag:
            return m * mag
    return 10 * mag


def bar_chart(title, subtitle, x_label, y_label, groups, series, values, fmt, log_scale=None):
    """groups: x labels (lines split at \\n); series: [(name, label, colour)]; values[g][s]: number or None.
    log_scale None: log when the values span more than 20x."""
    present = [v for row in values for v in row if v is not None and v > 0]
    lo, hi = (min(present), max(present)) if present else (1, 1)
    if log_scale is None:
        log_scale = hi / lo > 20
    width, height = 760, 440
    left, right, top, bottom = 78, 20, 86, 76
    # The legend's rows under the title (about 7 px a character), each further row 18 px lower.
    legend, x, row = [], left, 0
    for _, label, colour in series:
        w = 17 + 7 * len(label)
        if x > left and x + w > width - right:
            x, row = left, row + 1
        legend.append((x, 55 + 18 * row, label, colour))
        x += w + 22
    top += 18 * row
    height += 18 * row
    plot_w, plot_h = width - left - right, height - top - bottom
    headroom = 18  # above the highest tick, for the value printed on the highest bar
    data_h = plot_h - headroom
    base_y = top + plot_h

    if log_scale:
        # From the decade below the smallest value to the first 1, 2 or 5 x 10^k above the largest.
        lo_exp = math.floor(math.log10(lo))
        top_exp = math.floor(math.log10(hi))
        top_value = next(m * 10 ** top_exp for m in (1, 2, 5, 10) if m * 10 ** top_exp >= hi)
        span = math.log10(top_value) - lo_exp

        def y_of(v):
            return base_y - (math.log10(v) - lo_exp) / span * data_h

        ticks = [10 ** e for e in range(lo_exp, top_exp + 1)]
        if top_value not in ticks:
            ticks.append(top_value)
        minor = [m * 10 ** e for e in range(lo_exp, top_exp + 1) for m in (2, 5)
                 if m * 10 ** e < top_value]
        bottom_value = 10 ** lo_exp
    else:
        step = nice_step(hi)
        top_value = math.ceil(hi / step) * step

        def y_of(v):
            return base_y - v / top_value * data_h

        ticks = [i * step for i in range(int(round(top_value / step)) + 1)]
        minor = []
        bottom_value = 0

    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" %s>'
           % (width, height, width, height, FONT),
           '<rect width="100%" height="100%" fill="#ffffff"/>',
           '<text x="%d" y="24" font-size="17" font-weight="bold" fill="#222">%s</text>'
           % (left, escape(title)),
           '<text x="%d" y="43" font-size="12" fill="#555">%s</text>' % (left, escape(subtitle))]

    for x, y, label, colour in legend:
        out.append('<rect x="%d" y="%d" width="12" height="12" fill="%s"/>' % (x, y, colour))
        out.append('<text x="%d" y="%d" font-size="12" fill="#222">%s</text>'
                   % (x + 17, y + 10, escape(label)))

    # Grid and y axis.
    for v in minor:
        out.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#eeeeee"/>'
                   % (left, left + plot_w, y_of(v), y_of(v)))
    for v in ticks:
        y = y_of(v)
        out.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#d9d9d9"/>'
                   % (left, left + plot_w, y, y))
        out.append('<text x="%d" y="%.1f" font-size="11" fill="#444" text-anchor="end">%s</text>'
                   % (left - 6, y + 4, escape(fmt_tick(v))))
    out.append('<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="#444"/>' % (left, left, top, base_y))
    out.append('<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="#444"/>'
               % (left, left + plot_w, base_y, base_y))
    out.append('<text transform="translate(18,%d) rotate(-90)" font-size="12" fill="#222" '
               'text-anchor="middle">%s</text>' % (top + plot_h // 2, escape(y_label)))

    # Bars, grouped.
    group_w = plot_w / len(groups)
    bar_w = group_w * 0.8 / len(series)
    vertical = bar_w < 34
    for g, name in enumerate(groups):
        gx = left + g * group_w + group_w * 0.1
        for s, (_, label, colour) in enumerate(series):
            v = values[g][s]
            if v is None:
                continue
            bx = gx + s * bar_w
            by = y_of(max(v, bottom_value)) if not log_scale or v > 0 else base_y
            out.append('<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s">'
                       '<title>%s, %s: %s</title></rect>'
                       % (bx + 1, by, bar_w - 2, base_y - by, colour, escape(name.replace("\n", ", ")),
                          escape(label), escape(fmt(v))))
            cx = bx + bar_w / 2
            if vertical:
                out.append('<text transform="translate(%.1f,%.1f) rotate(-90)" font-size="11" '
                           'fill="#222">%s</text>' % (cx + 4, by - 4, escape(fmt(v))))
            else:
                out.append('<text x="%.1f" y="%.1f" font-size="11" fill="#222" '
                           'text-anchor="middle">%s</text>' % (cx, by - 4, escape(fmt(v))))
        for i, line in enumerate(name.split("\n")):
            out.append('<text x="%.1f" y="%d" font-size="12" fill="#222" text-anchor="middle">%s'
                       '</text>' % (left + (g + 0.5) * group_w, base_y + 18 + 15 * i, escape(line)))
    out.append('<text x="%d" y="%d" font-size="12" fill="#222" text-anchor="middle">'
               '%s</text>' % (left + plot_w // 2,
                              base_y + 26 + 15 * max(len(n.split("\n")) for n in groups),
                              escape(x_label)))
    out.append("</svg>")
    return "\n".join(out) + "\n"


def fmt_tick(v):
    return "{:,}".format(int(v)) if v == int(v) else "%g" % v


def pipeline_charts(rows):
    def key_of(r):
        return (r["nodes"], r["pods"], str(r["client_qps"]), r.get("creating_clients", 16))

    keys = []
    for r in rows:
        if key_of(r) not in keys:
            keys.append(key_of(r))
    several_qps = len({k[2] for k in keys}) > 1
    several_clients = len({k[3] for k in keys}) > 1
    groups = []
    for nodes, pods, qps, clients in keys:
        label = "{:,} nodes".format(nodes)
        if pods != nodes:
            label += " / {:,} pods".format(pods)
        if several_qps:
            label += "\nQPS " + qps
        if several_clients:
            label += "\n%d creating clients" % clients
        groups.append(label)
    names = []
    for r in rows:
        if r["variant"] not in names:
            names.append(r["variant"])
    names.sort(key=lambda n: list(VARIANTS).index(n) if n in VARIANTS else len(VARIANTS))
    spare = iter(SPARE_COLOURS)
    series = [(n,) + VARIANTS.get(n, (n, next(spare, "#333333"))) for n in names]
    by_key = {key_of(r) + (r["variant"],): r for r in rows}

    def table(field, scale):
        return [[by_key[k + (n,)][field] * scale if k + (n,) in by_key else None for n in names]
                for k in keys]

    qps = "" if several_qps else ", client QPS " + keys[0][2]
    each = "median over each variant's runs%s; the table: pipeline-latest.md" % qps
    x_label = "cluster size" + (" and kube-scheduler's client QPS" if several_qps else "")
    pods_s = bar_chart("Whole-pipeline scheduling throughput (higher is better)", each, x_label,
                       "pods scheduled per second (pods/s)", groups, series,
                       table("pods_per_second", 1), lambda v: "%.1f" % v, log_scale=False)
    p99 = table("p99_ms", 0.001)
    present = [v for row in p99 for v in row if v]
    log_scale = bool(present) and max(present) / min(present) > 20
    p99_chart = bar_chart("p99 pod creation to PodScheduled (lower is better)", each, x_label,
                          "p99 latency, seconds" + (" (log scale)" if log_scale else ""),
                          groups, series, p99, fmt_number, log_scale=log_scale)
    return pods_s, p99_chart


EXTENDER_COLOURS = ["#1f77b4", "#aec7e8", "#d62728", "#ff9896", "#2ca02c", "#98df8a"]


def extender_chart(results):
    """The extender microbench (latest.json): p99 per call at one connection, per cluster size
    and mode/verb, for the fewest claims per pod measured."""
    verbs = [v for c in results.get("clusters", []) for v in c.get("verbs", [])
             if "p99_ms" in v.get("c1", {}) and not v.get("constrained", False)]
    if not verbs:
        return None
    claims = min(v["claims_per_pod"] for v in verbs)
    verbs = [v for v in verbs if v["claims_per_pod"] == claims]
    sizes, names = [], []
    for v in verbs:
        if v["nodes"] not in sizes:
            sizes.append(v["nodes"])
        if (v["mode"], v["verb"]) not in names:
            names.append((v["mode"], v["verb"]))
    p99 = {(v["nodes"], v["mode"], v["verb"]): v["c1"]["p99_ms"] for v in verbs}
    values = [[p99.get((n,) + name) for name in names] for n in sizes]
    present = [x for row in values for x in row if x]
    log_scale = bool(present) and max(present) / min(present) > 20
    series = [(m + " " + verb, m + " " + verb, EXTENDER_COLOURS[i % len(EXTENDER_COLOURS)])
              for i, (m, verb) in enumerate(names)]
    return bar_chart("Extender p99 per call, one connection (lower is better)",
                     "%d claim%s per pod; medians of the runs; the table: latest.md"
                     % (claims, "" if claims == 1 else "s"), "cluster size",
                     "p99 latency, ms" + (" (log scale)" if log_scale else ""),
                     ["{:,} nodes".format(n) for n in sizes], series, values, fmt_number,
                     log_scale=log_scale)


def main(argv):
    if len(argv) > 2 or (len(argv) == 2 and argv[1] in ("-h", "--help")):
        sys.stdout.write(__doc__)
        return 0 if len(argv) == 2 else 2
    directory = argv[1] if len(argv) == 2 else os.path.join(os.path.dirname(
        os.path.abspath(__file__)), "results")
    charts = []
    if os.path.exists(os.path.join(directory, "pipeline-latest.json")) or os.path.exists(
            os.path.join(directory, "pipeline-latest.md")):
        pods_s, p99 = pipeline_charts(read_summary(directory))
        charts += [("pipeline-pods-per-second.svg", pods_s), ("pipeline-p99.svg", p99)]
    if os.path.exists(os.path.join(directory, "latest.json")):
        with open(os.path.join(directory, "latest.json")) as f:
            svg = extender_chart(json.load(f))
        if svg:
            charts.append(("extender-p99.svg", svg))
    if not charts:
        raise SystemExit("no pipeline-latest.json or latest.json in %s" % directory)
    for name, svg in charts:
        with open(os.path.join(directory, name), "w") as f:
            f.write(svg)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
