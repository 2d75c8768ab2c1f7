// Package metricstest reads metrics back for tests: a child's value, a
// family's samples by their labels.
package metricstest

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/svc-gateway/svc/internal/metrics"
)

// Value is the value of c, a single counter, gauge or untyped metric (a
// family's child); a histogram's is its count of observations.
func Value(t testing.TB, c prometheus.Metric) float64 {
	t.Helper()
	var d dto.Metric
	if err := c.Write(&d); err != nil {
		t.Fatal(err)
	}
	switch {
	case d.Counter != nil:
		return d.Counter.GetValue()
	case d.Gauge != nil:
		return d.Gauge.GetValue()
	case d.Histogram != nil:
		return float64(d.Histogram.GetSampleCount())
	}
	return d.GetUntyped().GetValue()
}

// Samples gathers family name from m's registry: each sample's value (a
// histogram's count) by its labels' values in the order of the labels'
// names, joined with ",". A family with nothing to report gives an empty
// map.
func Samples(t testing.TB, m *metrics.Metrics, name string) map[string]float64 {
	t.Helper()
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, s := range f.GetMetric() {
			values := make([]string, 0, len(s.GetLabel()))
			for _, l := range s.GetLabel() {
				values = append(values, l.GetValue())
			}
			var v float64
			switch {
			case s.Counter != nil:
				v = s.Counter.GetValue()
			case s.Gauge != nil:
				v = s.Gauge.GetValue()
			case s.Histogram != nil:
				v = float64(s.Histogram.GetSampleCount())
			}
			out[strings.Join(values, ",")] = v
		}
	}
	return out
}

// Nonzero is Samples without the samples that are 0: children made ahead
// of their first count.
func Nonzero(t testing.TB, m *metrics.Metrics, name string) map[string]float64 {
	t.Helper()
	out := Samples(t, m, name)
	for k, v := range out {
		if v == 0 {
			delete(out, k)
		}
	}
	return out
}
