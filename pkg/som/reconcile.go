package som

import (
	"sort"
	"strconv"
	"strings"
)

// maxGapScan bounds the previous elements examined per unmatched element,
// so a page that changed completely costs linear time, not quadratic.
const maxGapScan = 256

// reconcile lets elements that are recognisably the ones of the previous
// snapshot keep their ids, aligning the two element sequences the way a
// patience diff aligns lines:
//
//  1. Anchors: an element whose group (region, kind, identity key) occurs
//     once in each snapshot is the same element. Anchors that cross (a
//     block moved) are cut down to the longest run in order.
//  2. Between two anchors, the remaining elements pair in order with the
//     previous ones of the same group (duplicates keep their order), then
//     with a compatible one of the same region role and kind (see
//     compatible): a renamed link, an edited paragraph, a field whose form
//     changed action.
//  3. Paired elements inherit the previous id. An unpaired element keeps
//     its minted id, re-salted if prev used that id for anything, so an
//     old id never names a different element.
func (c *compiler) reconcile(prev *Snapshot) {
	prevRole := make(map[string]Role, len(prev.Regions))
	for _, r := range prev.Regions {
		prevRole[r.ID] = r.Role
	}
	c.reconcileRegions(prev)
	group := func(region string, e *Element) string {
		return region + "\x1f" + string(e.Kind) + "\x1f" + identityKey(e)
	}
	ng := make([]string, len(c.elems))
	count := map[string]int{}
	for i, e := range c.elems {
		ng[i] = group(c.regions[e.region].ID, &e.Element)
		count[ng[i]]++
	}
	pg := make([]string, len(prev.Elements))
	pcount := map[string]int{}
	pone := map[string]int{}
	for j := range prev.Elements {
		pg[j] = group(prev.Elements[j].Region, &prev.Elements[j])
		pcount[pg[j]]++
		pone[pg[j]] = j
	}
	match := make([]int, len(c.elems))
	for i := range c.elems {
		match[i] = -1
		if count[ng[i]] == 1 && pcount[ng[i]] == 1 {
			match[i] = pone[ng[i]]
		}
	}
	keepIncreasing(match)
	used := make([]bool, len(prev.Elements))
	for _, j := range match {
		if j >= 0 {
			used[j] = true
		}
	}
	// Pair the elements of each gap between anchors.
	for i := 0; i < len(c.elems); {
		if match[i] >= 0 {
			i++
			continue
		}
		lo := -1
		for k := i - 1; k >= 0; k-- {
			if match[k] >= 0 {
				lo = match[k]
				break
			}
		}
		end, hi := i, len(prev.Elements)
		for ; end < len(c.elems); end++ {
			if match[end] >= 0 {
				hi = match[end]
				break
			}
		}
		c.pairGap(prev, prevRole, ng, pg, match, used, i, end, lo+1, hi)
		i = end
	}
	seen := make(map[string]bool, len(c.elems)+len(prev.Elements))
	for _, p := range prev.Elements {
		seen[p.ID] = true
	}
	inherited := make(map[string]bool, len(c.elems))
	for i, e := range c.elems {
		if match[i] >= 0 {
			e.ID = prev.Elements[match[i]].ID
			inherited[e.ID] = true
		}
	}
	for i, e := range c.elems {
		if match[i] >= 0 {
			continue
		}
		base := e.ID
		for salt := 2; seen[e.ID] || inherited[e.ID]; salt++ {
			e.ID = hashID("e_", 8, base, "#"+strconv.Itoa(salt))
		}
		seen[e.ID] = true
	}
}

// pairGap pairs new elements [i, end) with unused previous ones [lo, hi):
// first the same group in order, then compatible ones.
func (c *compiler) pairGap(prev *Snapshot, prevRole map[string]Role, ng, pg []string, match []int, used []bool, i, end, lo, hi int) {
	if lo >= hi {
		return
	}
	if hi-lo > maxGapScan*4 {
		hi = lo + maxGapScan*4
	}
	next := map[string]int{} // per group, where to look next
	for k := i; k < end; k++ {
		for j := max(lo, next[ng[k]]); j < hi; j++ {
			if !used[j] && pg[j] == ng[k] {
				match[k], used[j] = j, true
				next[ng[k]] = j + 1
				break
			}
		}
	}
	from := lo
	for k := i; k < end; k++ {
		if match[k] >= 0 {
			from = max(from, match[k]+1)
			continue
		}
		e := c.elems[k]
		role := c.regions[e.region].Role
		for j, n := from, 0; j < hi && n < maxGapScan; j, n = j+1, n+1 {
			p := &prev.Elements[j]
			if used[j] || p.Kind != e.Kind || prevRole[p.Region] != role || !compatible(&e.Element, p) {
				continue
			}
			match[k], used[j] = j, true
			from = j + 1
			break
		}
	}
}

// keepIncreasing unmatches the anchors (match[i] >= 0) that are not part
// of the longest strictly increasing subsequence, so the anchors that
// remain are in the same order in both snapshots.
func keepIncreasing(match []int) {
	var idx []int // positions in match of anchors
	for i, j := range match {
		if j >= 0 {
			idx = append(idx, i)
		}
	}
	if len(idx) < 2 {
		return
	}
	tails := []int{} // tails[l]: index into idx ending an increasing run of length l+1
	parent := make([]int, len(idx))
	for k, i := range idx {
		v := match[i]
		l := sort.Search(len(tails), func(t int) bool { return match[idx[tails[t]]] >= v })
		if l > 0 {
			parent[k] = tails[l-1]
		} else {
			parent[k] = -1
		}
		if l == len(tails) {
			tails = append(tails, k)
		} else {
			tails[l] = k
		}
	}
	keep := make([]bool, len(idx))
	for k := tails[len(tails)-1]; k >= 0; k = parent[k] {
		keep[k] = true
	}
	for k, i := range idx {
		if !keep[k] {
			match[i] = -1
		}
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
