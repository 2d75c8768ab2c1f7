package som

import (
	"strings"
	"testing"
)

// checkInvariants asserts what must hold of every snapshot: unique ids with
// the right prefixes, every element in a known region, form fields that
// exist and point back, a Document that maps every DOM element id back to
// a node, and a context fenced exactly once.
func checkInvariants(t *testing.T, name string, s *Snapshot, doc *Document) {
	t.Helper()
	regions := map[string]Region{}
	for _, r := range s.Regions {
		if _, dup := regions[r.ID]; dup {
			t.Errorf("%s: duplicate region id %s", name, r.ID)
		}
		if !strings.HasPrefix(r.ID, "r_") || (r.Role == RoleForm) != strings.HasPrefix(r.ID, "r_form") {
			t.Errorf("%s: region id %s for role %s", name, r.ID, r.Role)
		}
		regions[r.ID] = r
	}
	ids := map[string]bool{}
	for _, e := range s.Elements {
		if ids[e.ID] {
			t.Errorf("%s: duplicate element id %s", name, e.ID)
		}
		ids[e.ID] = true
		if !strings.HasPrefix(e.ID, "e_") || len(e.ID) != 10 {
			t.Errorf("%s: element id %q", name, e.ID)
		}
		if _, ok := regions[e.Region]; !ok {
			t.Errorf("%s: element %s in unknown region %s", name, e.ID, e.Region)
		}
		if e.Form != "" {
			if f, ok := regions[e.Form]; !ok || f.Form == nil {
				t.Errorf("%s: element %s in unknown form %s", name, e.ID, e.Form)
			}
		}
		if e.Kind == KindInput && e.Type == "password" && e.Value != "" {
			t.Errorf("%s: password value shown", name)
		}
		if doc != nil {
			got, ok := doc.Element(e.ID)
			if !ok || got.ID != e.ID {
				t.Errorf("%s: document lacks %s", name, e.ID)
			}
			if _, ok := doc.Node(e.ID); !ok && e.Source != "jsonld" && e.Source != "opengraph" && e.Source != "microdata" {
				t.Errorf("%s: no node for %s (%s)", name, e.ID, e.Kind)
			}
		}
	}
	for _, r := range s.Regions {
		if r.Form == nil {
			continue
		}
		for _, f := range r.Form.Fields {
			if !ids[f] {
				t.Errorf("%s: form %s lists unknown field %s", name, r.ID, f)
			}
		}
	}
	if strings.Count(s.Context, beginMarker) != 1 || strings.Count(s.Context, endMarker) != 1 {
		t.Errorf("%s: context fence markers appear %d/%d times", name,
			strings.Count(s.Context, beginMarker), strings.Count(s.Context, endMarker))
	}
}
