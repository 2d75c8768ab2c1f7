package som

import (
	"testing"
)

// BenchmarkCompile compiles every real page; ns/op and B/op are per page,
// and the MB/s figure gives the time per MB of HTML.
func BenchmarkCompile(b *testing.B) {
	pages := loadCorpus(b)
	for _, p := range pages {
		b.Run(p.name, func(b *testing.B) {
			b.SetBytes(int64(len(p.html)))
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := Compile(Input{HTML: p.html, URL: p.url}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCompileCorpus compiles the whole corpus per iteration.
func BenchmarkCompileCorpus(b *testing.B) {
	pages := loadCorpus(b)
	total := 0
	for _, p := range pages {
		total += len(p.html)
	}
	b.SetBytes(int64(total))
	b.ReportAllocs()
	for b.Loop() {
		for _, p := range pages {
			if _, _, err := Compile(Input{HTML: p.html, URL: p.url}); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkDiff diffs the largest page against a reconciled copy of itself.
func BenchmarkDiff(b *testing.B) {
	pages := loadCorpus(b)
	big := pages[0]
	for _, p := range pages {
		if len(p.html) > len(big.html) {
			big = p
		}
	}
	a, _, _ := Compile(Input{HTML: big.html, URL: big.url})
	c, _, _ := Compile(Input{HTML: big.html, URL: big.url, Previous: a})
	b.ReportAllocs()
	for b.Loop() {
		Diff(a, c)
	}
}
