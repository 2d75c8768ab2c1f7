package som

import (
	"net/url"

	"golang.org/x/net/html"
)

// compiler holds one compile's state. It is used once.
type compiler struct {
	page    *url.URL // the page's URL
	base    *url.URL // what relative URLs resolve against: <base href> or the page
	baseSet bool
	lim     Limits
	meta    Meta
	sc      scanResult

	regions  []*region
	elems    []*elem
	trunc    Truncated
	nodes    int  // DOM elements visited
	full     bool // MaxElements reached
	mainSeen bool // a main region was inferred

	run      textRun
	lastText string // the last short text flushed, an implicit label
	lastReg  int    // the region lastText was in
	muted    int    // inside a label whose text already names its control

}

// region is a Region under construction.
type region struct {
	Region
	key    string // identity key, scope of its elements' ids
	node   *html.Node
	parent int // index, -1 for the body
	anchor string
	chrome bool // inside banner, navigation or contentinfo
}

// elem is an Element under construction.
type elem struct {
	Element
	node     *html.Node
	region   int
	form     int    // form region index, -1 when none
	formAttr string // the form attribute, resolved after the walk
	segs     []seg  // text and heading: their content with inline references
	inText   int    // index of the text element that renders this one inline, or -1
	key      string
}

// seg is a piece of a text run: plain text, or a reference to an inline
// element (a link or a price) rendered as [label](id).
type seg struct {
	text string
	ref  int // element index, -1 for plain text
}

// textRun gathers the inline content of the block being read.
type textRun struct {
	segs   []seg
	region int
	node   *html.Node // the block the run started in
	level  int        // >0 while reading a heading
	bytes  int
}

func newCompiler(page *url.URL, lim Limits) *compiler {
	return &compiler{page: page, base: page, lim: lim, run: textRun{region: -1}, lastReg: -1,
		meta: Meta{URL: page.String(), SOMVersion: Version, IDScheme: IDScheme}}
}

// truncate records that a guard fired.
func (c *compiler) truncate(reason string, dropped int) {
	c.trunc.Dropped += dropped
	for _, r := range c.trunc.Reasons {
		if r == reason {
			return
		}
	}
	c.trunc.Reasons = append(c.trunc.Reasons, reason)
}

// add appends an element unless the element guard is reached.
func (c *compiler) add(e *elem) int {
	if len(c.elems) >= c.lim.MaxElements {
		c.full = true
		c.truncate("elements", 1)
		return -1
	}
	e.inText = -1
	if e.Kind.Interactive() || e.Kind == KindPrice {
		// An implicit label names only the control right after it, and
		// not across a price.
		c.lastText = ""
	}
	c.elems = append(c.elems, e)
	return len(c.elems) - 1
}
