package som

import (
	"net/url"
	"strings"

	"golang.org/x/net/html"
)

// Document is the parsed page a Snapshot was compiled from. A session acts
// through it: it finds the node behind an id, and refuses an id whose
// element is no longer what the caller saw.
type Document struct {
	// Root is the parsed tree. Callers may read it; changing it breaks the
	// mapping from ids to nodes.
	Root *html.Node
	// Base is what relative URLs in the page resolve against: <base href>
	// or the page URL.
	Base *url.URL

	snap  *Snapshot
	nodes map[string]*html.Node // element and region id → node
	els   map[string]int        // element id → index in snap.Elements
	regs  map[string]int        // region id → index in snap.Regions
}

func (c *compiler) document(root *html.Node, s *Snapshot) *Document {
	d := &Document{Root: root, Base: c.base, snap: s, nodes: make(map[string]*html.Node, len(c.elems)+len(c.regions)),
		els: make(map[string]int, len(s.Elements)), regs: make(map[string]int, len(s.Regions))}
	for i, e := range c.elems {
		d.els[e.ID] = i
		if e.node != nil {
			d.nodes[e.ID] = e.node
		}
	}
	for i, r := range c.regions {
		d.regs[r.ID] = i
		if r.node != nil {
			d.nodes[r.ID] = r.node
		}
	}
	return d
}

// Snapshot returns the snapshot compiled with d.
func (d *Document) Snapshot() *Snapshot { return d.snap }

// Node returns the node behind an element or region id. Elements read from
// structured data have none.
func (d *Document) Node(id string) (*html.Node, bool) {
	n, ok := d.nodes[id]
	return n, ok
}

// Element returns the element with id.
func (d *Document) Element(id string) (Element, bool) {
	i, ok := d.els[id]
	if !ok {
		return Element{}, false
	}
	return d.snap.Elements[i], true
}

// Region returns the region with id; a form's region carries its Form.
func (d *Document) Region(id string) (Region, bool) {
	i, ok := d.regs[id]
	if !ok {
		return Region{}, false
	}
	return d.snap.Regions[i], true
}

// Resolve finds, in this document, the element that id named in seen (the
// snapshot the caller chose the id from) and returns its node. It fails
// with a *NotFoundError (ErrNotFound) when id is unknown here, and with a *StaleError
// (ErrStale) when the element here differs from the one in seen in what it
// is or does: kind, name, target, field, form action, region, or has no
// node to act on. A session must re-read the page rather than act on the
// wrong thing.
func (d *Document) Resolve(id string, seen *Snapshot) (*html.Node, Element, error) {
	e, ok := d.Element(id)
	if !ok {
		if r, ok := d.Region(id); ok && r.Form != nil {
			n := d.nodes[id]
			return n, Element{ID: id, Region: id}, d.checkRegion(r, seen)
		}
		return nil, Element{}, &NotFoundError{ID: id}
	}
	n, ok := d.nodes[id]
	if !ok {
		return nil, Element{}, &StaleError{ID: id, Detached: true}
	}
	if seen != nil && seen != d.snap {
		var was *Element
		for i := range seen.Elements {
			if seen.Elements[i].ID == id {
				was = &seen.Elements[i]
				break
			}
		}
		if was == nil || Fingerprint(seen, *was) != Fingerprint(d.snap, e) {
			return nil, Element{}, &StaleError{ID: id}
		}
	}
	return n, e, nil
}

func (d *Document) checkRegion(r Region, seen *Snapshot) error {
	if seen == nil || seen == d.snap {
		return nil
	}
	for _, p := range seen.Regions {
		if p.ID == r.ID {
			if p.Form == nil || p.Form.Action != r.Form.Action || p.Form.Method != r.Form.Method {
				break
			}
			return nil
		}
	}
	return &StaleError{ID: r.ID, Form: true}
}

// Fingerprint is what an element must keep for an action on its id to mean
// what it meant: kind, name, href, field, type, form action and method,
// region role. Text and values may change; these may not.
func Fingerprint(s *Snapshot, e Element) string {
	role, action := "", ""
	for _, r := range s.Regions {
		if r.ID == e.Region {
			role = string(r.Role)
		}
		if r.ID == e.Form && r.Form != nil {
			action = r.Form.Method + " " + r.Form.Action
		}
	}
	name := e.Name
	if e.Kind == KindText || e.Kind == KindHeading || e.Kind == KindPrice {
		name = ""
	}
	return hashID("", 16, string(e.Kind), strings.ToLower(clean(name)), e.Href, e.Field, e.Type, action, role)
}
