// Command promcheck validates the monitoring files of deploy/monitoring/: Prometheus rule files
// (*.yaml, *.yml) with Prometheus' own loader, model/rulefmt, which parses every expression and
// template; and Grafana dashboards (*.json), decoded strictly into grafana-foundation-sdk's
// dashboard model and checked by hand (title, uid, schemaVersion, unique panel ids, gridPos,
// targets with expr and refId, declared template variables), with every target's expression
// parsed by promql/parser once Grafana's variables are replaced by stand-ins.
//
//	promcheck [flags] FILE...
//
// With --source DIR (repeatable) it also checks that every metric the files read is registered in
// the C++ sources under those folders (the first string literal of a counter, gauge, histogram,
// counterFunc or gaugeFunc call; a histogram's name also stands for its _bucket, _sum and _count
// series), or is named by --external, or starts with an --external-prefix.
//
// With --print-metrics it prints every metric name the files read, sorted, one per line, and
// nothing else on stdout. Problems go to stderr, each naming its file and panel or rule, and
// make it exit 1; bad usage exits 2.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
)

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// checker gathers problems and the metric names each file reads, with where they are read.
type checker struct {
	parser   parser.Parser
	problems []string
	uses     map[string][]string // metric name -> "file: panel ..." / "file: rule ..."
}

func (c *checker) problem(format string, args ...any) {
	c.problems = append(c.problems, fmt.Sprintf(format, args...))
}

func (c *checker) use(name, where string) {
	for _, w := range c.uses[name] {
		if w == where {
			return
		}
	}
	c.uses[name] = append(c.uses[name], where)
}

// metricsOf records the metric names expr selects. A __name__ matcher other than an equality
// cannot be checked against the sources and is a problem.
func (c *checker) metricsOf(expr parser.Expr, where string) {
	parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
		vs, ok := node.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		named := vs.Name != ""
		if named {
			c.use(vs.Name, where)
		}
		for _, m := range vs.LabelMatchers {
			if m.Name != model.MetricNameLabel || (named && m.Type == labels.MatchEqual && m.Value == vs.Name) {
				continue
			}
			if m.Type == labels.MatchEqual {
				c.use(m.Value, where)
				named = true
			} else {
				c.problem("%s: selector %s matches metric names by %s; name each metric so it can be checked", where, vs.String(), m.Type)
				named = true
			}
		}
		if !named {
			c.problem("%s: selector %s names no metric", where, vs.String())
		}
		return nil
	})
}

// ---------------------------------------------------------------- rules

func (c *checker) checkRules(path string) {
	groups, errs := rulefmt.ParseFile(path, false, model.LegacyValidation, c.parser, slog.New(slog.NewTextHandler(io.Discard, nil)))
	for _, err := range errs {
		if msg := err.Error(); strings.HasPrefix(msg, path+": ") {
			c.problem("%s", msg) // ParseFile names the file itself
		} else {
			c.problem("%s: %s", path, msg)
		}
	}
	if groups == nil {
		return
	}
	if len(groups.Groups) == 0 {
		c.problem("%s: no rule groups", path)
	}
	alerts := map[string]bool{}
	for _, g := range groups.Groups {
		if len(g.Rules) == 0 {
			c.problem("%s: group %q has no rules", path, g.Name)
		}
		for i, r := range g.Rules {
			name := r.Alert
			kind := "alert"
			if name == "" {
				name, kind = r.Record, "record"
			}
			where := fmt.Sprintf("%s: group %q %s %q", path, g.Name, kind, name)
			if name == "" {
				where = fmt.Sprintf("%s: group %q rule %d", path, g.Name, i+1)
			}
			if r.Alert != "" {
				if alerts[r.Alert] {
					c.problem("%s: alert defined twice", where)
				}
				alerts[r.Alert] = true
				if r.For <= 0 {
					c.problem("%s: no 'for' (an alert fires on one evaluation without it)", where)
				}
				switch r.Labels["severity"] {
				case "critical", "warning", "info":
				case "":
					c.problem("%s: no severity label", where)
				default:
					c.problem("%s: severity %q is not critical, warning or info", where, r.Labels["severity"])
				}
				for _, a := range []string{"summary", "description"} {
					if strings.TrimSpace(r.Annotations[a]) == "" {
						c.problem("%s: no %s annotation", where, a)
					}
				}
			}
			expr, err := c.parser.ParseExpr(r.Expr)
			if err != nil {
				continue // rulefmt reported it
			}
			c.metricsOf(expr, where)
		}
	}
}

// ---------------------------------------------------------------- dashboards

// Grafana's global variables, by what they stand for; every other $name must be declared in
// the dashboard's templating.
var (
	durationBuiltins = map[string]bool{"__interval": true, "__rate_interval": true, "__range": true}
	numberBuiltins   = map[string]bool{
		"__interval_ms": true, "__rate_interval_ms": true, "__range_s": true, "__range_ms": true,
		"__from": true, "__to": true,
	}
	stringBuiltins = map[string]bool{"__dashboard": true, "__org": true, "__user": true, "__name": true}
	// $name, ${name}, ${name:format}, [[name]]; $1 (a label_replace group) is not a variable.
	variableRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(?::[^}]*)?\}|\$([A-Za-z_][A-Za-z0-9_]*)|\[\[([A-Za-z_][A-Za-z0-9_]*)(?::[^\]]*)?\]\]`)
	labelValues = regexp.MustCompile(`^\s*label_values\(\s*(.*?)\s*,\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)\s*$`)
	queryResult = regexp.MustCompile(`^\s*query_result\(\s*(.*)\s*\)\s*$`)
)

// substitute replaces the Grafana variables in expr by stand-ins PromQL accepts where they are
// meant to be used: durations for the interval and range variables, numbers for the _ms and _s
// ones, a plain word (valid in a label value or regex) for the dashboard's own variables.
func substitute(expr string, declared map[string]bool) (string, []string) {
	var unknown []string
	out := variableRef.ReplaceAllStringFunc(expr, func(ref string) string {
		m := variableRef.FindStringSubmatch(ref)
		name := m[1] + m[2] + m[3]
		switch {
		case durationBuiltins[name]:
			return "5m"
		case numberBuiltins[name]:
			return "300"
		case stringBuiltins[name], declared[name]:
			return "standin"
		}
		unknown = append(unknown, ref)
		return ref
	})
	return out, unknown
}

// panelView is the part of a panel the hand checks read; the SDK's strict decoding checks the
// rest of its shape.
type panelView struct {
	ID         *int64            `json:"id"`
	Type       string            `json:"type"`
	Title      string            `json:"title"`
	GridPos    *gridPos          `json:"gridPos"`
	Datasource json.RawMessage   `json:"datasource"`
	Targets    []json.RawMessage `json:"targets"`
	Panels     []json.RawMessage `json:"panels"`
}

type gridPos struct {
	H, W, X, Y *int
}

type targetView struct {
	RefID      string          `json:"refId"`
	Expr       *string         `json:"expr"`
	Datasource json.RawMessage `json:"datasource"`
}

type variableView struct {
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	Query      json.RawMessage `json:"query"`
	Datasource json.RawMessage `json:"datasource"`
}

type dashboardView struct {
	Title         string            `json:"title"`
	UID           string            `json:"uid"`
	SchemaVersion int               `json:"schemaVersion"`
	Panels        []json.RawMessage `json:"panels"`
	Templating    struct {
		List []variableView `json:"list"`
	} `json:"templating"`
}

func (c *checker) checkDashboard(path string, minSchema int, requiredVars []string) {
	raw, err := os.ReadFile(path)
	if err != nil {
		c.problem("%s: %v", path, err)
		return
	}
	var d dashboardView
	if err := json.NewDecoder(bytes.NewReader(raw)).Decode(&d); err != nil {
		c.problem("%s: %v", path, err)
		return
	}
	var sdk dashboard.Dashboard
	if errs := buildErrors(sdk.UnmarshalJSONStrict(raw)); len(errs) > 0 {
		for _, e := range errs {
			c.problem("%s: %s (grafana-foundation-sdk's strict decoding)", path, describePath(e, d.Panels))
		}
	} else if errs := buildErrors(sdk.Validate()); len(errs) > 0 {
		for _, e := range errs {
			c.problem("%s: %s (grafana-foundation-sdk's validation)", path, describePath(e, d.Panels))
		}
	}
	if strings.TrimSpace(d.Title) == "" {
		c.problem("%s: no title", path)
	}
	if !regexp.MustCompile(`^[A-Za-z0-9_-]{1,40}$`).MatchString(d.UID) {
		c.problem("%s: uid %q is not 1 to 40 letters, digits, - or _", path, d.UID)
	}
	if d.SchemaVersion < minSchema {
		c.problem("%s: schemaVersion %d, want at least %d", path, d.SchemaVersion, minSchema)
	}

	declared := map[string]bool{}
	for i, v := range d.Templating.List {
		where := fmt.Sprintf("%s: variable %d %q", path, i+1, v.Name)
		if v.Name == "" {
			c.problem("%s: no name", where)
			continue
		}
		if declared[v.Name] {
			c.problem("%s: declared twice", where)
		}
		declared[v.Name] = true
		if v.Type == "datasource" {
			var q string
			if json.Unmarshal(v.Query, &q) != nil || q != "prometheus" {
				c.problem("%s: a datasource variable of type prometheus is expected (query %s)", where, string(v.Query))
			}
		}
		if v.Type == "query" {
			c.checkDatasource(v.Datasource, where)
			c.checkVariableQuery(v.Query, declared, where)
		}
	}
	for _, name := range requiredVars {
		if !declared[name] {
			c.problem("%s: no template variable %q", path, name)
		}
	}
	for _, v := range d.Templating.List {
		if v.Name == "datasource" && v.Type != "datasource" {
			c.problem("%s: variable \"datasource\" is of type %q, not datasource", path, v.Type)
		}
	}

	ids := map[int64]string{}
	var top []placed
	for i, p := range d.Panels {
		if pl, ok := c.checkPanel(path, p, fmt.Sprintf("panel #%d", i+1), ids, declared); ok {
			top = append(top, pl)
		}
	}
	if len(top) == 0 {
		c.problem("%s: no panels", path)
	}
	for i := range top {
		for j := i + 1; j < len(top); j++ {
			a, b := top[i], top[j]
			if a.x < b.x+b.w && b.x < a.x+a.w && a.y < b.y+b.h && b.y < a.y+a.h {
				c.problem("%s: %s and %s overlap", path, a.name, b.name)
			}
		}
	}
}

// buildErrors flattens the SDK's error, whose nil is a typed nil slice (a non-nil error).
func buildErrors(err error) []string {
	if err == nil {
		return nil
	}
	var be cog.BuildErrors
	if errors.As(err, &be) {
		out := make([]string, 0, len(be))
		for _, e := range be {
			out = append(out, e.Error())
		}
		return out
	}
	return []string{err.Error()}
}

var sdkPanelPath = regexp.MustCompile(`^panels\[(\d+)\]`)

// describePath names the panel an SDK error path such as panels[3].options.x starts with.
func describePath(msg string, panels []json.RawMessage) string {
	m := sdkPanelPath.FindStringSubmatch(msg)
	if m == nil {
		return msg
	}
	i, _ := strconv.Atoi(m[1])
	if i >= len(panels) {
		return msg
	}
	var p panelView
	if json.Unmarshal(panels[i], &p) != nil || p.ID == nil {
		return msg
	}
	return fmt.Sprintf("panel %d %q: %s", *p.ID, p.Title, msg)
}

type placed struct {
	name       string
	x, y, w, h int
}

// checkPanel checks one panel (and a row's nested panels) and returns where it sits.
func (c *checker) checkPanel(path string, raw json.RawMessage, fallback string, ids map[int64]string, declared map[string]bool) (placed, bool) {
	var p panelView
	if err := json.Unmarshal(raw, &p); err != nil {
		c.problem("%s: %s: %v", path, fallback, err)
		return placed{}, false
	}
	name := fallback
	if p.ID != nil {
		name = fmt.Sprintf("panel %d %q", *p.ID, p.Title)
	} else if p.Title != "" {
		name = fmt.Sprintf("%s %q", fallback, p.Title)
	}
	where := path + ": " + name
	if p.ID == nil || *p.ID <= 0 {
		c.problem("%s: no positive id", where)
	} else if other, dup := ids[*p.ID]; dup {
		c.problem("%s: id %d is also %s", where, *p.ID, other)
	} else {
		ids[*p.ID] = name
	}
	if p.Type == "" {
		c.problem("%s: no type", where)
	}
	if strings.TrimSpace(p.Title) == "" {
		c.problem("%s: no title", where)
	}
	var pl placed
	ok := false
	switch g := p.GridPos; {
	case g == nil || g.H == nil || g.W == nil || g.X == nil || g.Y == nil:
		c.problem("%s: gridPos needs h, w, x and y", where)
	case *g.H < 1 || *g.W < 1 || *g.X < 0 || *g.Y < 0 || *g.X+*g.W > 24:
		c.problem("%s: gridPos h=%d w=%d x=%d y=%d is outside the 24-column grid", where, *g.H, *g.W, *g.X, *g.Y)
	default:
		pl, ok = placed{name, *g.X, *g.Y, *g.W, *g.H}, true
	}
	for i, n := range p.Panels {
		c.checkPanel(path, n, fmt.Sprintf("%s nested panel #%d", name, i+1), ids, declared)
	}
	if p.Type == "row" {
		if len(p.Targets) > 0 {
			c.problem("%s: a row has no targets", where)
		}
		return pl, ok
	}
	if len(p.Targets) == 0 {
		c.problem("%s: no targets", where)
	}
	c.checkDatasource(p.Datasource, where)
	refs := map[string]bool{}
	for i, raw := range p.Targets {
		var t targetView
		if err := json.Unmarshal(raw, &t); err != nil {
			c.problem("%s: target #%d: %v", where, i+1, err)
			continue
		}
		tw := fmt.Sprintf("%s target %s", where, t.RefID)
		if t.RefID == "" {
			tw = fmt.Sprintf("%s target #%d", where, i+1)
			c.problem("%s: no refId", tw)
		} else if refs[t.RefID] {
			c.problem("%s: refId used twice", tw)
		}
		refs[t.RefID] = true
		if len(t.Datasource) > 0 {
			c.checkDatasource(t.Datasource, tw)
		}
		if t.Expr == nil || strings.TrimSpace(*t.Expr) == "" {
			c.problem("%s: no expr", tw)
			continue
		}
		c.checkExpr(*t.Expr, declared, tw)
	}
	return pl, ok
}

// checkDatasource requires the Prometheus data source chosen through ${datasource}.
func (c *checker) checkDatasource(raw json.RawMessage, where string) {
	var ds struct{ Type, UID string }
	if len(raw) == 0 || json.Unmarshal(raw, &ds) != nil || ds.Type != "prometheus" || (ds.UID != "${datasource}" && ds.UID != "$datasource") {
		c.problem(`%s: datasource %s, want {"type": "prometheus", "uid": "${datasource}"}`, where, strings.TrimSpace(string(raw)))
	}
}

func (c *checker) checkExpr(expr string, declared map[string]bool, where string) {
	sub, unknown := substitute(expr, declared)
	for _, u := range unknown {
		c.problem("%s: %s is neither a template variable of the dashboard nor one of Grafana's", where, u)
	}
	parsed, err := c.parser.ParseExpr(sub)
	if err != nil {
		c.problem("%s: %v\n    expr: %s", where, err, sub)
		return
	}
	c.metricsOf(parsed, where)
}

// checkVariableQuery parses the PromQL inside a Prometheus query variable: label_values(expr,
// label), query_result(expr); label_values(label), label_names(), metrics(re) read no metric.
func (c *checker) checkVariableQuery(raw json.RawMessage, declared map[string]bool, where string) {
	var q string
	if json.Unmarshal(raw, &q) != nil {
		var obj struct{ Query string }
		if json.Unmarshal(raw, &obj) != nil {
			c.problem("%s: query is neither a string nor an object with a query", where)
			return
		}
		q = obj.Query
	}
	if m := labelValues.FindStringSubmatch(q); m != nil {
		c.checkExpr(m[1], declared, where)
	} else if m := queryResult.FindStringSubmatch(q); m != nil {
		c.checkExpr(m[1], declared, where)
	}
}

// ---------------------------------------------------------------- C++ registrations

var registration = regexp.MustCompile(`\b(counter|gauge|histogram|counterFunc|gaugeFunc|gaugeSeriesFunc)\s*\(\s*"([A-Za-z_:][A-Za-z0-9_:]*)"`)

// A metric name held in a constant (kSomethingMetric = "name") and registered through it.
var nameConstant = regexp.MustCompile(`\b(k[A-Za-z0-9]*Metric)\s*=\s*"([A-Za-z_:][A-Za-z0-9_:]*)"`)

// registered returns the metric names registered in the C++ sources under dirs: each series
// name a scrape shows, a histogram's with its suffixes.
func registered(dirs []string) (map[string]string, error) {
	names := map[string]string{}
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			switch filepath.Ext(path) {
			case ".cpp", ".cc", ".h", ".hpp":
			default:
				return nil
			}
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range nameConstant.FindAllSubmatch(src, -1) {
				names[string(m[2])] = path
			}
			for _, m := range registration.FindAllSubmatch(src, -1) {
				name := string(m[2])
				names[name] = path
				if string(m[1]) == "histogram" {
					for _, s := range []string{"_bucket", "_sum", "_count"} {
						names[name+s] = path
					}
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return names, nil
}

func main() {
	var sources, externals, prefixes, vars listFlag
	printMetrics := flag.Bool("print-metrics", false, "print every metric name the files read, sorted, one per line")
	minSchema := flag.Int("min-schema-version", 42, "lowest dashboard schemaVersion accepted")
	flag.Var(&sources, "source", "C++ source folder whose registrations define the exported metrics (repeatable)")
	flag.Var(&externals, "external", "metric exported by something else, allowed by exact name (repeatable)")
	flag.Var(&prefixes, "external-prefix", "prefix of metrics exported by something else (repeatable)")
	flag.Var(&vars, "require-variable", "template variable every dashboard must declare (repeatable)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: promcheck [flags] FILE... (*.json dashboards, *.yaml/*.yml rule files)\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}

	plugins.RegisterDefaultPlugins()
	c := &checker{parser: parser.NewParser(parser.Options{}), uses: map[string][]string{}}
	for _, f := range flag.Args() {
		switch strings.ToLower(filepath.Ext(f)) {
		case ".json":
			c.checkDashboard(f, *minSchema, vars)
		case ".yaml", ".yml":
			c.checkRules(f)
		default:
			c.problem("%s: neither a dashboard (.json) nor a rule file (.yaml, .yml)", f)
		}
	}

	names := make([]string, 0, len(c.uses))
	for n := range c.uses {
		names = append(names, n)
	}
	sort.Strings(names)

	if len(sources) > 0 {
		reg, err := registered(sources)
		if err != nil {
			c.problem("reading the sources: %v", err)
		}
		for _, n := range names {
			if _, ok := reg[n]; ok || contains(externals, n) || hasAnyPrefix(n, prefixes) {
				continue
			}
			c.problem("metric %s is registered in none of %s and is not an allowed external metric; read by:\n    %s",
				n, strings.Join(sources, ", "), strings.Join(c.uses[n], "\n    "))
		}
	}

	if len(c.problems) > 0 {
		for _, p := range c.problems {
			fmt.Fprintf(os.Stderr, "promcheck: %s\n", p)
		}
		fmt.Fprintf(os.Stderr, "promcheck: %d problem(s) in %s\n", len(c.problems), strings.Join(flag.Args(), " "))
		os.Exit(1)
	}
	if *printMetrics {
		for _, n := range names {
			fmt.Println(n)
		}
		return
	}
	fmt.Fprintf(os.Stderr, "promcheck: ok: %s (%d metric names)\n", strings.Join(flag.Args(), " "), len(names))
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
