package som

import (
	"math"
	"sort"
	"strconv"
	"strings"
)

// Delta is the semantic difference between two snapshots of a page.
type Delta struct {
	Changes      []Change `json:"changes"`
	DriftScore   float64  `json:"driftScore"`
	Significance Tier     `json:"significance"`
	Added        int      `json:"added"`
	Removed      int      `json:"removed"`
	Changed      int      `json:"changed"`
}

// Change is one difference. Element changes carry the element's id, kind
// and region; a changed field carries its value before and after.
type Change struct {
	Type         ChangeType `json:"type"`
	ID           string     `json:"id,omitempty"`
	Kind         Kind       `json:"kind,omitempty"`
	Region       string     `json:"region,omitempty"`
	Field        string     `json:"field,omitempty"`
	Before       string     `json:"before,omitempty"`
	After        string     `json:"after,omitempty"`
	Significance Tier       `json:"significance"`
	S            float64    `json:"s"`
}

// ChangeType says what happened.
type ChangeType string

// The change types. A page change is about the page as a whole (title,
// canonical, structured facts); a form change about a form's submission.
const (
	ChangeAdded   ChangeType = "added"
	ChangeRemoved ChangeType = "removed"
	ChangeChanged ChangeType = "changed"
	ChangeMoved   ChangeType = "moved"
	ChangePage    ChangeType = "page"
	ChangeForm    ChangeType = "form"
)

// Tier is how much a change matters.
type Tier string

// The tiers, weakest first.
const (
	TierNone   Tier = "none"
	TierLow    Tier = "low"
	TierMedium Tier = "medium"
	TierHigh   Tier = "high"
)

func (t Tier) rank() int {
	switch t {
	case TierLow:
		return 1
	case TierMedium:
		return 2
	case TierHigh:
		return 3
	}
	return 0
}

// lowCap bounds what all low-tier changes together add to the drift:
// fifty footer tweaks are still noise.
const lowCap = 0.10

// Diff compares prev with next, matching elements and regions by id (so
// next should have been compiled with prev as its Previous). Either may be
// nil, which reads as an empty page. The scoring is described in the
// package documentation.
func Diff(prev, next *Snapshot) Delta {
	if prev == nil {
		prev = &Snapshot{}
	}
	if next == nil {
		next = &Snapshot{}
	}
	d := &differ{prev: prev, next: next, pz: zones(prev), nz: zones(next)}
	d.page()
	d.forms()
	d.elements()
	return d.result()
}

type differ struct {
	prev, next *Snapshot
	pz, nz     map[string]zone
	changes    []Change
}

func (d *differ) add(c Change) {
	if c.Significance == "" {
		c.Significance = TierNone
	}
	if c.Significance == TierNone {
		c.S = 0
	}
	c.S = math.Round(c.S*10000) / 10000
	d.changes = append(d.changes, c)
}

// page compares page-level facts.
func (d *differ) page() {
	a, b := &d.prev.Meta, &d.next.Meta
	if x, y := clean(a.Title), clean(b.Title); x != y {
		t, s := TierHigh, 0.5
		if keyName(x) == keyName(y) {
			t, s = TierLow, 0.01
		}
		d.add(Change{Type: ChangePage, Field: "title", Before: a.Title, After: b.Title, Significance: t, S: s})
	}
	if a.Lang != b.Lang {
		d.add(Change{Type: ChangePage, Field: "lang", Before: a.Lang, After: b.Lang, Significance: TierMedium, S: 0.2})
	}
	if a.Canonical != b.Canonical {
		t, s := TierMedium, 0.2
		if a.Canonical != "" && b.Canonical != "" && hostOf(a.Canonical) != hostOf(b.Canonical) {
			t, s = TierHigh, 0.8
		}
		d.add(Change{Type: ChangePage, Field: "canonical", Before: a.Canonical, After: b.Canonical, Significance: t, S: s})
	}
	if a.URL != "" && b.URL != "" && hostOf(a.URL) != hostOf(b.URL) {
		d.add(Change{Type: ChangePage, Field: "url", Before: a.URL, After: b.URL, Significance: TierHigh, S: 0.8})
	}
	var av, bv string
	if a.Structured != nil {
		av = a.Structured.Availability
	}
	if b.Structured != nil {
		bv = b.Structured.Availability
	}
	if av != bv && av != "" && bv != "" {
		d.add(Change{Type: ChangePage, Field: "availability", Before: av, After: bv, Significance: TierHigh, S: 0.7})
	}
}

// forms compares the submission of forms present in both.
func (d *differ) forms() {
	prev := map[string]*Form{}
	for _, r := range d.prev.Regions {
		if r.Form != nil {
			prev[r.ID] = r.Form
		}
	}
	for _, r := range d.next.Regions {
		f := r.Form
		p, ok := prev[r.ID]
		if f == nil || !ok {
			continue
		}
		if p.Action != f.Action {
			// Where a form sends what is typed into it is the change that
			// matters most: a new host may be a new owner.
			s := 0.8
			d.add(Change{Type: ChangeForm, ID: r.ID, Region: r.ID, Field: "action", Before: p.Action, After: f.Action, Significance: TierHigh, S: s})
		}
		if p.Method != f.Method {
			d.add(Change{Type: ChangeForm, ID: r.ID, Region: r.ID, Field: "method", Before: p.Method, After: f.Method, Significance: TierHigh, S: 0.8})
		}
		if p.Enctype != f.Enctype {
			d.add(Change{Type: ChangeForm, ID: r.ID, Region: r.ID, Field: "enctype", Before: p.Enctype, After: f.Enctype, Significance: TierMedium, S: 0.3})
		}
	}
}

// elements compares elements by id.
func (d *differ) elements() {
	prev := make(map[string]*Element, len(d.prev.Elements))
	for i := range d.prev.Elements {
		prev[d.prev.Elements[i].ID] = &d.prev.Elements[i]
	}
	seen := make(map[string]bool, len(d.next.Elements))
	hosts := map[string]bool{hostOf(d.prev.Meta.URL): true}
	for _, e := range d.prev.Elements {
		if e.Href != "" {
			hosts[hostOf(e.Href)] = true
		}
	}
	for i := range d.next.Elements {
		e := &d.next.Elements[i]
		seen[e.ID] = true
		p, ok := prev[e.ID]
		if !ok {
			t, s := d.presence(e, d.nz[e.Region], hosts)
			d.add(Change{Type: ChangeAdded, ID: e.ID, Kind: e.Kind, Region: e.Region, After: summary(e), Significance: t, S: s})
			continue
		}
		d.compare(p, e)
	}
	for i := range d.prev.Elements {
		e := &d.prev.Elements[i]
		if seen[e.ID] {
			continue
		}
		t, s := d.presence(e, d.pz[e.Region], nil)
		d.add(Change{Type: ChangeRemoved, ID: e.ID, Kind: e.Kind, Region: e.Region, Before: summary(e), Significance: t, S: s})
	}
}

// presence scores an element that appeared or disappeared.
func (d *differ) presence(e *Element, z zone, hosts map[string]bool) (Tier, float64) {
	if z.ignore || e.Kind == KindHidden {
		return TierNone, 0
	}
	switch e.Kind {
	case KindPrice:
		return TierHigh, 0.6
	case KindInput, KindTextArea, KindSelect, KindCheckbox, KindRadio:
		if sensitiveField(e) {
			return TierHigh, 0.7
		}
		return TierHigh, 0.5
	case KindImage:
		return TierLow, 0.01
	}
	if z.chrome {
		return TierLow, 0.02
	}
	switch e.Kind {
	case KindButton:
		if buysSomething(e.Name) {
			return TierHigh, 0.7 // add to cart appeared or went: availability
		}
		return TierMedium, 0.15 * z.weight
	case KindLink:
		if h := hostOf(e.Href); hosts != nil && h != "" && !hosts[h] {
			return TierMedium, 0.4 * z.weight // a link to a domain the page never linked to
		}
		return TierMedium, 0.15 * z.weight
	case KindHeading:
		if e.Level == 1 {
			return TierHigh, 0.5
		}
		return TierMedium, 0.25 * z.weight
	case KindText:
		return TierMedium, 0.2 * math.Min(1, float64(len(e.Text))/500) * z.weight
	}
	return TierLow, 0.01
}

// compare scores the fields of an element present in both snapshots.
func (d *differ) compare(p, e *Element) {
	z := d.nz[e.Region]
	if z.ignore || e.Kind == KindHidden {
		return
	}
	ch := func(field, before, after string, t Tier, s float64) {
		d.add(Change{Type: ChangeChanged, ID: e.ID, Kind: e.Kind, Region: e.Region, Field: field, Before: before, After: after, Significance: t, S: s})
	}
	if p.Kind == KindPrice || e.Kind == KindPrice {
		if t, s, ok := priceChange(p.Price, e.Price); ok {
			ch("price", priceText(orZero(p.Price)), priceText(orZero(e.Price)), t, s)
		}
	} else if p.Text != e.Text {
		t, s := textChange(p, e, z)
		if len(p.Text) <= 80 && len(e.Text) <= 80 {
			// A short text that is a price is scored as one.
			if pt, ps, ok := priceChange(parsePrice(p.Text), parsePrice(e.Text)); ok && parsePrice(p.Text) != nil && parsePrice(e.Text) != nil {
				t, s = pt, ps
			}
		}
		ch("text", p.Text, e.Text, t, s)
	}
	if p.Name != e.Name && e.Kind != KindPrice {
		t, s := TierMedium, 0.15*z.weight
		switch {
		case keyName(p.Name) == keyName(e.Name) && len(p.Name) == len(e.Name):
			t, s = TierLow, 0.01
		case z.chrome:
			t, s = TierLow, 0.02
		case e.Kind.Control():
			t, s = TierMedium, 0.3
		}
		ch("name", p.Name, e.Name, t, s)
	}
	if p.Href != e.Href {
		t, s := TierMedium, 0.15*z.weight
		switch {
		case hrefKey(p.Href) == hrefKey(e.Href):
			t, s = TierNone, 0
		case z.chrome:
			t, s = TierLow, 0.02
		case hostOf(p.Href) != hostOf(e.Href):
			s = 0.4 * z.weight
		}
		ch("href", p.Href, e.Href, t, s)
	}
	if p.Value != e.Value {
		ch("value", p.Value, e.Value, TierMedium, 0.1*z.weight)
	}
	if p.Type != e.Type || p.Required != e.Required {
		s := 0.5
		if e.Type == "password" || p.Type == "password" {
			s = 0.7
		}
		ch("type", p.Type+req(p.Required), e.Type+req(e.Required), TierHigh, s)
	}
	if p.Checked != e.Checked || p.Disabled != e.Disabled {
		t, s := TierMedium, 0.1*z.weight
		if e.Kind == KindButton && buysSomething(e.Name) && p.Disabled != e.Disabled {
			t, s = TierHigh, 0.7
		}
		ch("state", state(p), state(e), t, s)
	}
	if !sameOptions(p.Options, e.Options) {
		ch("options", optionList(p.Options), optionList(e.Options), TierMedium, 0.3*z.weight)
	}
	if p.Level != e.Level {
		ch("level", strconv.Itoa(p.Level), strconv.Itoa(e.Level), TierMedium, 0.25*z.weight)
	}
	if p.Form != e.Form {
		ch("form", p.Form, e.Form, TierMedium, 0.3)
	}
	if p.Region != e.Region {
		d.add(Change{Type: ChangeMoved, ID: e.ID, Kind: e.Kind, Region: e.Region, Field: "region", Before: p.Region, After: e.Region, Significance: TierLow, S: 0.01})
	}
}

// priceChange scores a price that changed: min(0.9, 0.5 + |Δ%|/50), a
// change under 1% is low (rounding, a currency feed), a change of currency
// is high.
func priceChange(a, b *Price) (Tier, float64, bool) {
	if a == nil || b == nil {
		if a == nil && b == nil {
			return "", 0, false
		}
		return TierHigh, 0.6, true
	}
	if a.Currency != b.Currency && a.Currency != "" && b.Currency != "" {
		return TierHigh, 0.7, true
	}
	x, ok1 := amountOf(a)
	y, ok2 := amountOf(b)
	if !ok1 || !ok2 || x == y {
		return "", 0, false
	}
	if x == 0 {
		return TierHigh, 0.9, true
	}
	pct := math.Abs(y-x) / math.Abs(x) * 100
	if pct < 1 {
		return TierLow, 0.02, true
	}
	return TierHigh, math.Min(0.9, 0.5+pct/50), true
}

// textChange scores edited text: the same once digits are masked (a date,
// a counter, "5 min ago") is low; otherwise 0.3 × the word edit distance,
// times the region's weight; headings weigh as headings.
func textChange(p, e *Element, z zone) (Tier, float64) {
	if digitMask(p.Text) == digitMask(e.Text) {
		return TierLow, 0.01
	}
	if z.chrome {
		return TierLow, 0.02
	}
	if e.Kind == KindHeading {
		if e.Level == 1 {
			return TierHigh, 0.5
		}
		return TierMedium, 0.25 * z.weight
	}
	dist := wordDistance(p.Text, e.Text)
	if dist < 0.05 {
		return TierLow, 0.01
	}
	return TierMedium, 0.3 * dist * z.weight
}

// digitMask lowercases, collapses whitespace and replaces digit runs.
func digitMask(s string) string {
	var b strings.Builder
	inDigits := false
	for _, r := range strings.ToLower(clean(s)) {
		if r >= '0' && r <= '9' {
			if !inDigits {
				b.WriteByte('#')
			}
			inDigits = true
			continue
		}
		inDigits = false
		b.WriteRune(r)
	}
	return b.String()
}

// wordDistance is the word-level Levenshtein distance over the longer
// length, on the first 300 words of each text.
func wordDistance(a, b string) float64 {
	x, y := strings.Fields(a), strings.Fields(b)
	if len(x) > 300 {
		x = x[:300]
	}
	if len(y) > 300 {
		y = y[:300]
	}
	n := max(len(x), len(y))
	if n == 0 {
		return 0
	}
	prev := make([]int, len(y)+1)
	cur := make([]int, len(y)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(x); i++ {
		cur[0] = i
		for j := 1; j <= len(y); j++ {
			c := prev[j-1]
			if x[i-1] != y[j-1] {
				c++
			}
			cur[j] = min(c, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return float64(prev[len(y)]) / float64(n)
}

// sensitiveField reports whether a control takes a secret, money or an
// identity: password, file, email, payment fields.
func sensitiveField(e *Element) bool {
	switch e.Type {
	case "password", "file", "email":
		return true
	}
	f := strings.ToLower(e.Field + " " + e.Name)
	for _, w := range []string{"card", "cvv", "cvc", "iban", "account", "ssn", "payment", "password"} {
		if strings.Contains(f, w) {
			return true
		}
	}
	return false
}

// buysSomething reports whether a button's name is an add-to-cart.
func buysSomething(name string) bool {
	n := strings.ToLower(name)
	for _, w := range []string{"add to cart", "add to basket", "add to bag", "add to trolley", "buy now", "buy it now", "add to order"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

func orZero(p *Price) *Price {
	if p == nil {
		return &Price{}
	}
	return p
}

func req(r bool) string {
	if r {
		return " required"
	}
	return ""
}

func state(e *Element) string {
	var s []string
	if e.Checked {
		s = append(s, "checked")
	}
	if e.Disabled {
		s = append(s, "disabled")
	}
	return strings.Join(s, " ")
}

func sameOptions(a, b []Option) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Value != b[i].Value || a[i].Label != b[i].Label {
			return false
		}
	}
	return true
}

func optionList(os []Option) string {
	var b strings.Builder
	for i, o := range os {
		if i == 20 {
			b.WriteString("|…")
			break
		}
		if i > 0 {
			b.WriteByte('|')
		}
		b.WriteString(o.Label)
	}
	return b.String()
}

// summary is how an added or removed element reads in a change.
func summary(e *Element) string {
	switch e.Kind {
	case KindText, KindHeading:
		return clip(e.Text, 200)
	case KindPrice:
		return priceText(orZero(e.Price))
	case KindLink:
		return clip(e.Name, 120) + " -> " + e.Href
	}
	return clip(e.Name, 120)
}

// zone is where an element sits, for scoring: ignored (advertising, a
// cookie banner), chrome (banner, navigation, footer), and the weight of
// medium-tier changes there.
type zone struct {
	ignore, chrome bool
	weight         float64
}

// zones maps each region id to its zone, walking up the region tree: a
// form inside a footer is footer, an ad inside main is ignored.
func zones(s *Snapshot) map[string]zone {
	byID := make(map[string]*Region, len(s.Regions))
	for i := range s.Regions {
		byID[s.Regions[i].ID] = &s.Regions[i]
	}
	out := make(map[string]zone, len(s.Regions))
	for _, r := range s.Regions {
		z := zone{weight: 1}
		found := false
		for q, n := byID[r.ID], 0; q != nil && n < 64; q, n = byID[q.Parent], n+1 {
			switch {
			case q.Role == RoleAdvertisement || (q.Role == RoleDialog && q.Inferred):
				z.ignore = true
			case q.Role.Chrome():
				z.chrome, z.weight = true, 0.2
			case found:
			case q.Role == RoleComplementary:
				z.weight, found = 0.3, true
			case q.Role == RoleDialog:
				z.weight, found = 0.5, true
			case q.Role == RoleMain || q.Role == RoleForm:
				found = true
			}
		}
		out[r.ID] = z
	}
	return out
}

// result sorts the changes and computes the drift:
//
//	L     = min(lowCap, Σ s over low-tier changes)
//	drift = 1 − (1 − L) · Π (1 − s) over high and medium changes
func (d *differ) result() Delta {
	out := Delta{Changes: d.changes, Significance: TierNone}
	if out.Changes == nil {
		out.Changes = []Change{}
	}
	sort.SliceStable(out.Changes, func(i, j int) bool {
		a, b := out.Changes[i], out.Changes[j]
		if a.S != b.S {
			return a.S > b.S
		}
		if a.Type != b.Type {
			return a.Type < b.Type
		}
		if a.ID != b.ID {
			return a.ID < b.ID
		}
		return a.Field < b.Field
	})
	low, keep := 0.0, 1.0
	for _, c := range out.Changes {
		switch c.Type {
		case ChangeAdded:
			out.Added++
		case ChangeRemoved:
			out.Removed++
		default:
			out.Changed++
		}
		if c.Significance.rank() > out.Significance.rank() {
			out.Significance = c.Significance
		}
		switch c.Significance {
		case TierLow:
			low += c.S
		case TierMedium, TierHigh:
			keep *= 1 - math.Min(1, math.Max(0, c.S))
		}
	}
	drift := 1 - (1-math.Min(lowCap, low))*keep
	out.DriftScore = math.Round(math.Min(1, math.Max(0, drift))*10000) / 10000
	return out
}
