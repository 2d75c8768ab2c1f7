package som

import (
	"strconv"
	"strings"
)

// maxGapScan bounds the previous elements examined per unmatched element,
// so a page that changed completely costs linear time, not quadratic.
const maxGapScan = 256

// reconcile lets elements that are recognisably the ones of the previous
// snapshot keep their ids. Elements whose stateless id is in prev are the
// same element by construction (same scope, kind, key and occurrence) and
// anchor the alignment. Each remaining element is paired with the first
// unpaired element of prev in the same gap between anchors that has the
// same region role and kind and is compatible (see compatible), and
// inherits its id: a renamed link, an edited paragraph, a field whose form
// changed action. An element left unpaired keeps its minted id, re-salted
// if prev used that id for anything, so an old id never names a different
// element.
func (c *compiler) reconcile(prev *Snapshot) {
	prevRole := make(map[string]Role, len(prev.Regions))
	for _, r := range prev.Regions {
		prevRole[r.ID] = r.Role
	}
	c.reconcileRegions(prev)
	prevIdx := make(map[string]int, len(prev.Elements))
	for j, p := range prev.Elements {
		prevIdx[p.ID] = j
	}
	match := make([]int, len(c.elems))
	used := make([]bool, len(prev.Elements))
	for i, e := range c.elems {
		match[i] = -1
		if j, ok := prevIdx[e.ID]; ok && prev.Elements[j].Kind == e.Kind && !used[j] {
			match[i], used[j] = j, true
		}
	}
	// hi[i]: the prev index of the next anchored element after i.
	hi := make([]int, len(c.elems))
	next := len(prev.Elements)
	for i := len(c.elems) - 1; i >= 0; i-- {
		hi[i] = next
		if match[i] >= 0 {
			next = match[i]
		}
	}
	lo := -1
	for i, e := range c.elems {
		if match[i] >= 0 {
			lo = match[i]
			continue
		}
		role := c.regions[e.region].Role
		for j, n := lo+1, 0; j < hi[i] && n < maxGapScan; j, n = j+1, n+1 {
			p := &prev.Elements[j]
			if used[j] || p.Kind != e.Kind || prevRole[p.Region] != role || !compatible(&e.Element, p) {
				continue
			}
			match[i], used[j] = j, true
			e.ID = p.ID
			lo = j
			break
		}
	}
	seen := make(map[string]bool, len(c.elems)+len(prev.Elements))
	for _, p := range prev.Elements {
		seen[p.ID] = true
	}
	for i, e := range c.elems {
		if match[i] >= 0 || !seen[e.ID] {
			seen[e.ID] = true
			continue
		}
		base := e.ID
		for salt := 2; seen[e.ID]; salt++ {
			e.ID = hashID("e_", 8, base, "#"+strconv.Itoa(salt))
		}
		seen[e.ID] = true
	}
}

// reconcileRegions lets a region whose key changed (a form whose action
// path moved, a section whose heading was edited) keep its id when prev
// has an unmatched region of the same role and name in the same order.
func (c *compiler) reconcileRegions(prev *Snapshot) {
	have := make(map[string]bool, len(c.regions))
	for _, r := range c.regions {
		have[r.ID] = true
	}
	var spare []*Region
	for i := range prev.Regions {
		if !have[prev.Regions[i].ID] {
			spare = append(spare, &prev.Regions[i])
		}
	}
	prevIDs := map[string]bool{}
	for _, r := range prev.Regions {
		prevIDs[r.ID] = true
	}
	for _, r := range c.regions {
		if prevIDs[r.ID] {
			continue
		}
		for k, p := range spare {
			if p == nil || p.Role != r.Role || !sameRegion(&r.Region, p) {
				continue
			}
			r.ID, spare[k] = p.ID, nil
			break
		}
	}
	for _, r := range c.regions {
		if r.parent >= 0 {
			r.Parent = c.regions[r.parent].ID
		}
	}
}

// sameRegion reports whether two regions of one role are the same one: the
// same label, or for forms the same name and method.
func sameRegion(a, b *Region) bool {
	if a.Form != nil && b.Form != nil {
		return a.Form.Name == b.Form.Name && a.Form.Method == b.Form.Method
	}
	return keyName(a.Label) == keyName(b.Label) || a.Role == RoleRegion
}

// compatible reports whether a and b, of one kind and region role, may be
// one element that changed: same identity key, or the same target (link),
// the same submitted field (controls), the same level (headings), mostly
// the same words (text). A pairing never gives an id to an element that
// acts differently from what the id named, unless only its label changed.
func compatible(a, b *Element) bool {
	if identityKey(a) == identityKey(b) {
		return true
	}
	switch a.Kind {
	case KindLink:
		return hrefKey(a.Href) == hrefKey(b.Href) || (keyName(a.Name) == keyName(b.Name) && a.Name != "")
	case KindButton:
		return (a.Field != "" && a.Field == b.Field) || (a.Name != "" && keyName(a.Name) == keyName(b.Name))
	case KindInput, KindTextArea, KindSelect, KindCheckbox, KindHidden:
		return (a.Field != "" && a.Field == b.Field) || (a.Field == "" && b.Field == "" && keyName(a.Name) == keyName(b.Name))
	case KindRadio:
		return a.Field == b.Field
	case KindHeading:
		return a.Level == b.Level
	case KindText:
		return wordOverlap(a.Text, b.Text) >= 0.5
	case KindPrice:
		return a.Source == b.Source
	case KindImage:
		return true
	}
	return false
}

// wordOverlap is |A∩B| / |A∪B| over the first 64 lowercased words of each.
func wordOverlap(a, b string) float64 {
	wa, wb := wordSet(a), wordSet(b)
	if len(wa) == 0 && len(wb) == 0 {
		return 1
	}
	inter := 0
	for w := range wa {
		if wb[w] {
			inter++
		}
	}
	return float64(inter) / float64(len(wa)+len(wb)-inter)
}

func wordSet(s string) map[string]bool {
	m := map[string]bool{}
	for i, w := range strings.Fields(strings.ToLower(s)) {
		if i == 64 {
			break
		}
		m[w] = true
	}
	return m
}
