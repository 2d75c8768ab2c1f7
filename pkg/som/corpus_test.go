package som

import (
	"bytes"
	"encoding/json"
	"sort"
	"testing"
	"time"
)

// TestCorpusCompiles compiles every real page: no error, within the guards,
// deterministic to the byte, and far smaller than the HTML. It reports the
// context/HTML ratio per page and checks SOM.md's targets for it.
func TestCorpusCompiles(t *testing.T) {
	pages := loadCorpus(t)
	var ratios, productRatios []float64
	var totalMB float64
	var totalTime time.Duration
	for _, p := range pages {
		start := time.Now()
		s, doc, err := Compile(Input{HTML: p.html, URL: p.url, ContentType: "text/html"})
		totalTime += time.Since(start)
		totalMB += float64(len(p.html)) / (1 << 20)
		if err != nil {
			t.Errorf("%s: %v", p.name, err)
			continue
		}
		if s.Meta.Truncated != nil {
			t.Errorf("%s: truncated by %v", p.name, s.Meta.Truncated.Reasons)
		}
		if s.Meta.HTMLBytes != len(p.html) || s.Meta.SOMBytes != len(s.Context) {
			t.Errorf("%s: byte counts %d/%d", p.name, s.Meta.HTMLBytes, s.Meta.SOMBytes)
		}
		if len(s.Elements) == 0 {
			t.Errorf("%s: no elements", p.name)
		}
		checkInvariants(t, p.name, s, doc)
		a, _ := json.Marshal(s)
		s2, _, _ := Compile(Input{HTML: p.html, URL: p.url, ContentType: "text/html"})
		b, _ := json.Marshal(s2)
		if !bytes.Equal(a, b) {
			t.Errorf("%s: two compiles of the same page differ", p.name)
		}
		r := float64(s.Meta.SOMBytes) / float64(s.Meta.HTMLBytes)
		ratios = append(ratios, r)
		if len(p.name) > 3 && p.name[:3] == "pe-" {
			productRatios = append(productRatios, r)
		}
		t.Logf("%-40s html=%8d context=%6d (%5.2f%%) json=%7d elements=%5d regions=%3d", p.name, s.Meta.HTMLBytes,
			s.Meta.SOMBytes, 100*r, len(a), len(s.Elements), len(s.Regions))
	}
	med, p90 := quantile(ratios, 0.5), quantile(ratios, 0.9)
	t.Logf("context/html: median %.2f%%, p90 %.2f%%, product median %.2f%%; %d pages, %.1f ms/MB",
		100*med, 100*p90, 100*quantile(productRatios, 0.5), len(ratios), float64(totalTime.Milliseconds())/totalMB)
	if med > 0.10 {
		t.Errorf("median context/html ratio %.2f%% above 10%%", 100*med)
	}
	if m := quantile(productRatios, 0.5); m > 0.05 {
		t.Errorf("median product-page ratio %.2f%% above 5%%", 100*m)
	}
}

func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[int(q*float64(len(s)-1)+0.5)]
}
