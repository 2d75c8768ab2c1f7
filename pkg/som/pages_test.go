package som

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/svc-gateway/svc/internal/shareddata"
)

// corpusPage is one real page from the shared corpus.
type corpusPage struct {
	name, dir, url string
	html           []byte
}

// pagesDir finds the shared corpus: ../shared/data/pages beside the
// repository root, which is the nearest directory above that holds go.mod.
func pagesDir(tb testing.TB) string {
	return shareddata.Dir(tb, "pages")
}

// loadCorpus reads every page of the corpus, with its origin URL from
// INDEX.tsv (pages without one get a placeholder on their own name).
func loadCorpus(tb testing.TB) []corpusPage {
	tb.Helper()
	dir := pagesDir(tb)
	idx, err := os.ReadFile(filepath.Join(dir, "INDEX.tsv"))
	if err != nil {
		tb.Fatal(err)
	}
	urls := map[string]string{}
	for i, line := range strings.Split(string(idx), "\n") {
		f := strings.Split(line, "\t")
		if i == 0 || len(f) < 10 {
			continue
		}
		urls[f[0]] = f[9]
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	var out []corpusPage
	for _, e := range ents {
		if !e.IsDir() || strings.HasPrefix(e.Name(), "_") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "source.html"))
		if err != nil {
			continue
		}
		u := urls[e.Name()]
		if u == "" {
			u = "https://" + e.Name() + ".example/"
		}
		out = append(out, corpusPage{name: e.Name(), dir: filepath.Join(dir, e.Name()), url: u, html: b})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	if len(out) == 0 {
		tb.Skip("SKIPPED: the real-page corpus holds no pages")
	}
	return out
}
