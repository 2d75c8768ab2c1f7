package metrics_test

import (
	"encoding/json"
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

// Every metric the dashboard queries is one svc exports; every panel has
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
