package metrics_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/svc-gateway/svc/internal/metrics"
)

// dashboard is the part of a Grafana dashboard's JSON model the test reads.
type dashboard struct {
	Title      string  `json:"title"`
	UID        string  `json:"uid"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query string `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID         int            `json:"id"`
	Type       string         `json:"type"`
	Title      string         `json:"title"`
	Datasource map[string]any `json:"datasource"`
	Targets    []struct {
		Expr       string         `json:"expr"`
		Datasource map[string]any `json:"datasource"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // a collapsed row's
}

// readDashboard reads docs/grafana/svc.json from the module root.
func readDashboard(t *testing.T) dashboard {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("no caller information")
	}
	path := filepath.Join(filepath.Dir(file), "..", "..", "docs", "grafana", "svc.json")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("%s is not valid JSON: %v", path, err)
	}
	return d
}

// registered names every family metrics.New registers: the families its
// fields hold, described (an observed vector or not), and whatever the
// registry gathers (the build info, the Go runtime and process collectors);
// true for a histogram or summary, whose series have suffixes.
func registered(t *testing.T) map[string]bool {
	t.Helper()
	m := metrics.New(metrics.Options{})
	names := map[string]bool{}
	histogram := map[reflect.Type]bool{
		reflect.TypeFor[*prometheus.HistogramVec](): true,
		reflect.TypeFor[prometheus.Histogram]():     true,
	}
	descs := make(chan *prometheus.Desc, 64)
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	v := reflect.ValueOf(m).Elem()
	for i := range v.NumField() {
		if !v.Type().Field(i).IsExported() {
			continue
		}
		c, ok := v.Field(i).Interface().(prometheus.Collector)
		if !ok {
			continue
		}
		hist := histogram[v.Type().Field(i).Type]
		go func() {
			c.Describe(descs)
			descs <- nil
		}()
		for d := <-descs; d != nil; d = <-descs {
			if g := fqName.FindStringSubmatch(d.String()); g != nil {
				names[g[1]] = hist
			}
		}
	}
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		names[f.GetName()] = f.GetType() == dto.MetricType_HISTOGRAM || f.GetType() == dto.MetricType_SUMMARY
	}
	return names
}

// metricName finds the metric names in a PromQL expression.
var metricName = regexp.MustCompile(`\b(?:svc|go|process)_[a-zA-Z0-9_]+`)

// Every metric the dashboard queries is one svc exports, and every label it
// matches on or groups by is one of that metric's; every panel has
// a title and queries, through the dashboard's data source variable.
func TestDashboardQueriesExistingMetrics(t *testing.T) {
	d := readDashboard(t)
	if d.Title == "" || d.UID == "" {
		t.Error("the dashboard needs a title and a uid")
	}
	hasVar := false
	for _, v := range d.Templating.List {
		if v.Name == "datasource" && v.Type == "datasource" && v.Query == "prometheus" {
			hasVar = true
		}
	}
	if !hasVar {
		t.Error(`no "datasource" variable of type datasource over prometheus`)
	}
	known := registered(t)
	labels := familyLabels(t)
	var all []panel
	for _, p := range d.Panels {
		all = append(all, p)
		all = append(all, p.Panels...)
	}
	ids := map[int]bool{}
	used := map[string]bool{}
	queries := 0
	for _, p := range all {
		if ids[p.ID] {
			t.Errorf("panel id %d is used twice", p.ID)
		}
		ids[p.ID] = true
		if p.Title == "" {
			t.Errorf("panel %d has no title", p.ID)
		}
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no targets", p.Title)
		}
		if p.Datasource["uid"] != "${datasource}" {
			t.Errorf("panel %q does not use the ${datasource} variable: %v", p.Title, p.Datasource)
		}
		for _, tg := range p.Targets {
			queries++
			if strings.TrimSpace(tg.Expr) == "" {
				t.Errorf("panel %q has a target without an expression", p.Title)
			}
			names := metricName.FindAllString(tg.Expr, -1)
			if len(names) == 0 {
				t.Errorf("panel %q: %q queries no svc, go or process metric", p.Title, tg.Expr)
			}
			for _, n := range names {
				if !exists(known, n) {
					t.Errorf("panel %q queries %s, which svc does not export", p.Title, n)
				}
				used[n] = true
			}
			for _, problem := range labelProblems(tg.Expr, labels) {
				t.Errorf("panel %q: %s", p.Title, problem)
			}
		}
	}
	if queries == 0 {
		t.Fatal("the dashboard has no queries")
	}
}

// exists says whether name is a family, or a histogram's series of one.
func exists(known map[string]bool, name string) bool {
	if _, ok := known[name]; ok {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && known[base] {
			return true
		}
	}
	return false
}

// The test knows a name svc does not export when it sees one.
func TestDashboardCheckRefusesAnUnknownMetric(t *testing.T) {
	known := registered(t)
	for _, n := range []string{"svc_gateway_requests_total", "svc_gateway_overhead_seconds_bucket", "svc_ledger_batch_runs_sum", "svc_job_queue_depth",
		"svc_provider_breaker_state", "go_goroutines", "process_cpu_seconds_total"} {
		if !exists(known, n) {
			t.Errorf("%s should be known", n)
		}
	}
	for _, n := range []string{"svc_gateway_request_total", "svc_job_queue_depth_bucket", "svc_gateway_requests_total_count", "svc_nothing"} {
		if exists(known, n) {
			t.Errorf("%s should be unknown", n)
		}
	}
}

// familyLabels names the labels of every family svc exports, the tenant
// label included (it is there when turned on): the variable and constant
// labels of each field's descriptions, and those of every series the
// registry gathers (the Go runtime's and process' collectors).
func familyLabels(t *testing.T) map[string]map[string]bool {
	t.Helper()
	out := map[string]map[string]bool{}
	add := func(name string, ls ...string) {
		if out[name] == nil {
			out[name] = map[string]bool{}
		}
		for _, l := range ls {
			if l = strings.TrimSpace(l); l != "" {
				out[name][l] = true
			}
		}
	}
	desc := regexp.MustCompile(`fqName: "([^"]+)".*constLabels: \{([^}]*)\}, variableLabels: \{([^}]*)\}`)
	constName := regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)=`)
	for _, tenant := range []bool{false, true} {
		m := metrics.New(metrics.Options{TenantLabel: tenant})
		v := reflect.ValueOf(m).Elem()
		for i := range v.NumField() {
			if !v.Type().Field(i).IsExported() {
				continue
			}
			c, ok := v.Field(i).Interface().(prometheus.Collector)
			if !ok {
				continue
			}
			descs := make(chan *prometheus.Desc, 64)
			go func() {
				c.Describe(descs)
				close(descs)
			}()
			for d := range descs {
				g := desc.FindStringSubmatch(d.String())
				if g == nil {
					t.Fatalf("cannot read %s", d)
				}
				add(g[1], strings.Split(g[3], ",")...)
				for _, c := range constName.FindAllStringSubmatch(g[2], -1) {
					add(g[1], c[1])
				}
			}
		}
		fams, err := m.Registry().Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fams {
			add(f.GetName())
			for _, s := range f.GetMetric() {
				for _, l := range s.GetLabel() {
					add(f.GetName(), l.GetName())
				}
			}
			if f.GetType() == dto.MetricType_SUMMARY {
				add(f.GetName(), "quantile")
			}
		}
	}
	return out
}

// Prometheus' own target labels, on every series scraped.
var targetLabels = map[string]bool{"instance": true, "job": true}

var (
	// selector is a metric's selector with label matchers: name{...}.
	selector = regexp.MustCompile(`\b((?:svc|go|process)_[a-zA-Z0-9_]+)\s*\{([^}]*)\}`)
	// matcher is one label matcher's label name.
	matcher = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)`)
	// grouping is an aggregation's or a vector match's label list.
	grouping = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)`)
)

// seriesLabels are the labels of name's series: its family's, with le for
// a histogram's _bucket series; nil for a name svc does not export.
func seriesLabels(labels map[string]map[string]bool, name string) map[string]bool {
	if ls, ok := labels[name]; ok {
		return ls
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && labels[base] != nil {
			if suffix != "_bucket" {
				return labels[base]
			}
			ls := map[string]bool{"le": true}
			for l := range labels[base] {
				ls[l] = true
			}
			return ls
		}
	}
	return nil
}

// labelProblems checks the labels expr uses: each matcher's against its
// metric's labels, each label an aggregation or a vector match names
// against the labels of the metrics in expr (at least one must have it).
func labelProblems(expr string, labels map[string]map[string]bool) []string {
	var problems []string
	for _, s := range selector.FindAllStringSubmatch(expr, -1) {
		ls := seriesLabels(labels, s[1])
		if ls == nil {
			continue // an unknown name is the other check's
		}
		for _, m := range matcher.FindAllStringSubmatch(s[2], -1) {
			if !ls[m[1]] && !targetLabels[m[1]] {
				problems = append(problems, fmt.Sprintf("%q matches on %s, which %s does not have", expr, m[1], s[1]))
			}
		}
	}
	var inExpr []map[string]bool
	for _, n := range metricName.FindAllString(expr, -1) {
		if ls := seriesLabels(labels, n); ls != nil {
			inExpr = append(inExpr, ls)
		}
	}
	for _, g := range grouping.FindAllStringSubmatch(expr, -1) {
		for _, l := range strings.Split(g[1], ",") {
			l = strings.TrimSpace(l)
			if l == "" || targetLabels[l] {
				continue
			}
			found := false
			for _, ls := range inExpr {
				found = found || ls[l]
			}
			if !found {
				problems = append(problems, fmt.Sprintf("%q groups by %s, which none of its metrics has", expr, l))
			}
		}
	}
	return problems
}

// The label check refuses a label a family does not have, in a matcher or
// in a grouping, and passes the labels it has.
func TestDashboardCheckRefusesAnUnknownLabel(t *testing.T) {
	labels := familyLabels(t)
	for _, expr := range []string{
		`sum by (route, status_class) (rate(svc_gateway_requests_total{status_class="5xx", tenant!~"x"}[5m]))`,
		`histogram_quantile(0.99, sum by (le, endpoint) (rate(svc_gateway_overhead_seconds_bucket[5m])))`,
		`sum by (instance, job) (svc_job_queue_depth{state="queued"})`,
		`sum by (tier) (rate(svc_cache_hits_total[5m])) / on (tier) sum by (tier) (rate(svc_cache_lookups_total[5m]))`,
		`go_info{version!=""}`,
	} {
		if p := labelProblems(expr, labels); len(p) > 0 {
			t.Errorf("%s: %v", expr, p)
		}
	}
	for _, expr := range []string{
		`sum by (bogus) (rate(svc_gateway_requests_total[5m]))`,
		`sum(rate(svc_gateway_requests_total{bogus="1"}[5m]))`,
		`sum(rate(svc_gateway_requests_total{status_class="5xx",bogus=~"x"}[5m]))`,
		`sum without (effect) (svc_job_queue_depth)`,
		`sum by (le) (rate(svc_gateway_overhead_seconds_sum[5m]))`,
		`svc_policy_evaluations_total{effect="deny"}`,
	} {
		if p := labelProblems(expr, labels); len(p) == 0 {
			t.Errorf("%s: a label the family does not have passed", expr)
		}
	}
}
