package som

import (
	"bytes"
	"fmt"
	"net/url"
	"strings"

	"golang.org/x/net/html"
)

// Input is a page to compile.
type Input struct {
	HTML        []byte
	ContentType string // the Content-Type header; its charset wins over the page's own
	URL         string // the page's final URL: links and form actions resolve against it
	// Previous is the last snapshot of the same URL. When given (and of the
	// same IDScheme), elements that are recognisably the same keep their ids.
	Previous *Snapshot
	Limits   Limits
}

// Limits are the guards. A page past one is compiled as far as the guard
// allows and marked Truncated; it never fails. Zero fields take defaults.
type Limits struct {
	MaxInputBytes int // bytes of HTML read; default 10 MiB
	MaxNodes      int // DOM elements visited; default 80,000
	MaxDepth      int // DOM nesting; default 256
	MaxElements   int // SOM elements kept; default 20,000
}

// DefaultLimits are the limits a zero Limits means.
var DefaultLimits = Limits{MaxInputBytes: 10 << 20, MaxNodes: 80_000, MaxDepth: 256, MaxElements: 20_000}

func (l Limits) withDefaults() Limits {
	if l.MaxInputBytes <= 0 {
		l.MaxInputBytes = DefaultLimits.MaxInputBytes
	}
	if l.MaxNodes <= 0 {
		l.MaxNodes = DefaultLimits.MaxNodes
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = DefaultLimits.MaxDepth
	}
	if l.MaxElements <= 0 {
		l.MaxElements = DefaultLimits.MaxElements
	}
	return l
}

// Compile turns a page into a Snapshot and the parsed Document the
// snapshot's ids point into. It fails only on a URL that is not absolute
// http(s) (ErrInvalidURL); any HTML, however broken or hostile, compiles.
// A bug fails with a *CompileError rather than a panic.
func Compile(in Input) (snap *Snapshot, doc *Document, err error) {
	page, err := url.Parse(strings.TrimSpace(in.URL))
	if err != nil || (page.Scheme != "http" && page.Scheme != "https") || page.Host == "" {
		return nil, nil, fmt.Errorf("%w: %q", ErrInvalidURL, in.URL)
	}
	defer func() {
		// A bug must not take the gateway down with it: report it instead.
		if r := recover(); r != nil {
			snap, doc = nil, nil
			err = &CompileError{Op: "compile", Err: fmt.Errorf("panic: %v", r)}
		}
	}()
	lim := in.Limits.withDefaults()
	c := newCompiler(page, lim)
	raw := in.HTML
	c.meta.HTMLBytes = len(raw)
	if len(raw) > lim.MaxInputBytes {
		raw = raw[:lim.MaxInputBytes]
		c.truncate("input", 0)
	}
	text, cs := decode(raw, in.ContentType)
	c.meta.Charset = cs
	c.meta.ContentType = in.ContentType
	root, err := html.ParseWithOptions(bytes.NewReader(text), html.ParseOptionEnableScripting(true))
	if err != nil {
		// The parser fails only when its reader does; ours cannot.
		return nil, nil, &CompileError{Op: "parse", Err: err}
	}
	c.scan(root)
	c.walkRoot(root)
	c.mintIDs()
	if p := in.Previous; p != nil && p.Meta.IDScheme == IDScheme {
		c.reconcile(p)
	}
	snap = c.snapshot()
	snap.Context = render(snap, c)
	snap.Meta.SOMBytes = len(snap.Context)
	snap.Meta.EstTokens = (len(snap.Context) + 3) / 4
	return snap, c.document(root, snap), nil
}
