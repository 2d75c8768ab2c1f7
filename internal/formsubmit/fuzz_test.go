package formsubmit

import (
	"net/url"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/svc-gateway/svc/internal/errs"
)

// FuzzBuild submits every form of arbitrary markup with and
// without its default button. Beyond not panicking: a submission is GET or
// POST to an absolute http(s) URL; a GET query and an urlencoded body parse
// back, in order, to exactly the entries; any error is classified.
func FuzzBuild(f *testing.F) {
	for _, seed := range []string{
		`<form><input name=a value=1></form>`,
		`<form method=post action="//x.test/p?q#f"><textarea name="a&b">x` + "\r\n" + `y</textarea><input type=image name=i></form>`,
		`<form id=f></form><input form=f name=z value="~*'!"><select name=s form=f multiple><option selected>a<option selected>b</select>`,
		`<form action="javascript:x"><fieldset disabled><legend><input name=l></legend></fieldset></form>`,
		`<base href="gopher://x/"><form action=a><button formmethod=dialog></button></form>`,
		`<form enctype=multipart/form-data method=post><input type=file name='"'><input type=radio name=r checked><input type=radio name=r checked value=2></form>`,
		`<table><form><tr><td><input name=t></td></tr></form></table>`,
		`<form dir=auto><input name=q dirname=d value="ש"></form>`,
	} {
		f.Add(seed)
	}
	page := mustURL("http://shop.test/dir/page?x=1")
	f.Fuzz(func(t *testing.T, src string) {
		d, err := html.Parse(strings.NewReader(src))
		if err != nil {
			return
		}
		walk(d, func(form *html.Node) {
			if !isElement(form, "form") {
				return
			}
			for _, submitter := range []*html.Node{nil, DefaultButton(form)} {
				s, err := Build(form, submitter, State{}, page)
				if err != nil {
					if errs.As(err) == nil || errs.KindOf(err) == errs.Internal {
						t.Fatalf("unclassified error: %v", err)
					}
					continue
				}
				u, err := url.Parse(s.URL)
				if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
					t.Fatalf("bad action url %q (%v)", s.URL, err)
				}
				switch {
				case s.Method == "GET":
					if len(s.Body) != 0 || !u.ForceQuery && u.RawQuery == "" && len(s.Entries) > 0 {
						t.Fatalf("GET with body or without query: %+v", s)
					}
					checkDecodes(t, u.RawQuery, s.Entries)
				case s.Method == "POST" && s.ContentType == EncURLEncoded:
					checkDecodes(t, string(s.Body), s.Entries)
				case s.Method == "POST" && (s.ContentType == EncTextPlain || strings.HasPrefix(s.ContentType, EncMultipart)):
				default:
					t.Fatalf("unexpected method or type: %s %s", s.Method, s.ContentType)
				}
			}
		})
	})
}

// checkDecodes is assertDecodes for the fuzzer.
func checkDecodes(t *testing.T, encoded string, entries []Entry) {
	t.Helper()
	var pairs []string
	if encoded != "" {
		pairs = strings.Split(encoded, "&")
	}
	if len(pairs) != len(entries) {
		t.Fatalf("%d pairs for %d entries: %q", len(pairs), len(entries), encoded)
	}
	for i, pair := range pairs {
		k, v, ok := strings.Cut(pair, "=")
		k2, err1 := url.QueryUnescape(k)
		v2, err2 := url.QueryUnescape(v)
		if !ok || err1 != nil || err2 != nil ||
			k2 != normalizeNewlines(entries[i].Name) || v2 != normalizeNewlines(entries[i].Value) {
			t.Fatalf("pair %q does not decode to entry %+v", pair, entries[i])
		}
	}
}
