package formsubmit

import (
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/html"

	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/shareddata"
)

// TestRealPageForms builds a submission for every form of the annotated
// fs- pages in ../shared/data/pages (read in place), with each form's
// default button, and checks that every field the annotation names is one
// of the form's controls and that the request decodes back to the entries.
func TestRealPageForms(t *testing.T) {
	t.Parallel()
	dir := shareddata.Dir(t, "pages")
	pages, _ := filepath.Glob(filepath.Join(dir, "fs-*"))
	if len(pages) == 0 {
		t.Skip("SKIP: no fs- pages in ../shared/data/pages: real-form tests did not run")
	}
	forms := 0
	for _, p := range pages {
		var ann struct {
			URL    string              `json:"url"`
			Fields []map[string]string `json:"visible_html_fields"`
		}
		raw, err := os.ReadFile(filepath.Join(p, "annotation.json"))
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(raw, &ann))
		src, err := os.ReadFile(filepath.Join(p, "source.html"))
		require.NoError(t, err)
		d, err := html.Parse(strings.NewReader(string(src)))
		require.NoError(t, err)
		page, err := url.Parse(ann.URL)
		require.NoError(t, err)

		var all []*html.Node
		walk(d, func(n *html.Node) {
			if isElement(n, "form") {
				all = append(all, n)
			}
		})
		require.Len(t, all, len(ann.Fields), p)
		for i, form := range all {
			forms++
			names := map[string]bool{}
			for _, c := range Controls(form) {
				name, _ := attr(c, "name")
				names[name] = true
			}
			for field := range ann.Fields[i] {
				if pointerOnly[filepath.Base(p)+" "+field] {
					assert.False(t, names[field], "%s: %q is found now; drop it from pointerOnly", p, field)
					continue
				}
				assert.True(t, names[field], "%s form %d: annotated field %q is not a control", filepath.Base(p), i, field)
			}
			s, err := Build(form, DefaultButton(form), State{}, page)
			if err != nil {
				// javascript: and mailto: actions are refused, nothing else.
				requireKind(t, err, errs.Forbidden, "scheme_not_allowed")
				continue
			}
			u, err := url.Parse(s.URL)
			require.NoError(t, err)
			encoded := u.RawQuery
			if s.Method == "POST" && s.ContentType == EncURLEncoded {
				encoded = string(s.Body)
			}
			if s.Method == "GET" || s.ContentType == EncURLEncoded {
				assertDecodes(t, encoded, s.Entries)
			}
		}
	}
	t.Logf("%d forms on %d pages submitted", forms, len(pages))
}

// pointerOnly lists fields that a browser associates with their form only
// through the parser's form-element pointer: mis-nested markup closes the
// form's subtree before them, and the parsed tree does not keep the pointer
// (see Controls).
var pointerOnly = map[string]bool{
	"fs-brooklynbrewshop.com-5 comment": true,
	"fs-brooklynbrewshop.com-5 subject": true,
}

// assertDecodes checks that an urlencoded string parses back, in order, to
// the entries with newlines normalised.
func assertDecodes(t *testing.T, encoded string, entries []Entry) {
	t.Helper()
	got := []Entry{}
	if encoded != "" {
		for pair := range strings.SplitSeq(encoded, "&") {
			k, v, _ := strings.Cut(pair, "=")
			k, err := url.QueryUnescape(k)
			require.NoError(t, err, pair)
			v, err = url.QueryUnescape(v)
			require.NoError(t, err, pair)
			got = append(got, Entry{Name: k, Value: v})
		}
	}
	want := make([]Entry, len(entries))
	for i, e := range entries {
		want[i] = Entry{Name: normalizeNewlines(e.Name), Value: normalizeNewlines(e.Value)}
	}
	require.Equal(t, want, got, encoded)
}
