package som

import (
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

// Context limits: a text block shows its first maxTextContext bytes (the
// JSON keeps it whole), a select its first maxOptionsContext options.
const (
	maxTextContext    = 240
	maxOptionsContext = 6
)

// The fence around page content. Page text can contain neither marker:
// every run of "untrusted page content" in it is rewritten (see neutral),
// and both markers end with a nonce derived from the fenced text itself.
const (
	beginMarker = "# BEGIN UNTRUSTED PAGE CONTENT"
	endMarker   = "# END UNTRUSTED PAGE CONTENT"
)

var fenceLike = regexp.MustCompile(`(?i)untrusted[\s_-]*page[\s_-]*content`)

// neutral makes page text unable to forge a fence marker.
func neutral(s string) string {
	if !strings.Contains(strings.ToLower(s), "untrusted") {
		return s
	}
	return fenceLike.ReplaceAllString(s, "(untrusted-page-content)")
}

// render writes the context: a header of facts svc measured, then the page
// as one line per element inside the untrusted fence. Ids appear on what can
// be acted on and on prices; headings are markdown; regions are bracketed
// and indented by nesting; inline links read [label](id).
func render(s *Snapshot, c *compiler) string {
	var body strings.Builder
	depth := map[string]int{}
	roles := map[string]*Region{}
	for i := range s.Regions {
		r := &s.Regions[i]
		roles[r.ID] = r
		if r.Parent != "" {
			depth[r.ID] = depth[r.Parent] + 1
		}
	}
	if s.Meta.Title != "" {
		fmt.Fprintf(&body, "title: %s\n", neutral(s.Meta.Title))
	}
	if st := s.Meta.Structured; st != nil {
		body.WriteString("structured:")
		if len(st.Types) > 0 {
			body.WriteString(" " + neutral(strings.Join(st.Types, ",")))
		}
		for _, kv := range [][2]string{{"name", st.Name}, {"brand", st.Brand}, {"sku", st.SKU}, {"availability", st.Availability}} {
			if kv[1] != "" {
				fmt.Fprintf(&body, " %s=%q", kv[0], neutral(kv[1]))
			}
		}
		body.WriteByte('\n')
	}
	cur := ""
	omitted := 0
	for i := range s.Elements {
		e := &s.Elements[i]
		ce := c.elems[i]
		if ce.inText >= 0 || e.Kind == KindHidden || e.Kind == KindImage {
			continue
		}
		if e.Kind == KindText && labelsNext(s.Elements, i) {
			continue
		}
		if e.Region != cur {
			if omitted > 0 {
				fmt.Fprintf(&body, "%s  (%d elements omitted)\n", indent(depth[cur]), omitted)
				omitted = 0
			}
			cur = e.Region
			writeRegion(&body, roles[cur], depth[cur], c.page)
		}
		if r := roles[cur]; r != nil && r.Role == RoleAdvertisement {
			omitted++
			continue
		}
		body.WriteString(indent(depth[cur]))
		writeElement(&body, e, ce, c)
		body.WriteByte('\n')
	}
	if omitted > 0 {
		fmt.Fprintf(&body, "%s  (%d elements omitted)\n", indent(depth[cur]), omitted)
	}
	nonce := hashID("", 10, body.String())
	var out strings.Builder
	out.Grow(body.Len() + 400)
	m := &s.Meta
	fmt.Fprintf(&out, "# page url=%s lang=%s\n", m.URL, strings.ReplaceAll(neutral(m.Lang), " ", ""))
	fmt.Fprintf(&out, "# som=%s html=%dB elements=%d (interactive %d) regions=%d forms=%d prices=%d",
		m.SOMVersion, m.HTMLBytes, m.Counts.Elements, m.Counts.Interactive, m.Counts.Regions, m.Counts.Forms, m.Counts.Prices)
	if t := m.Truncated; t != nil {
		fmt.Fprintf(&out, " truncated=%s dropped=%d", strings.Join(t.Reasons, ","), t.Dropped)
	}
	out.WriteString("\n" + beginMarker + " " + nonce + "\n")
	out.WriteString(body.String())
	out.WriteString(endMarker + " " + nonce + "\n")
	return out.String()
}

// labelsNext reports whether text element i only repeats the name of the
// control after it ("Email:" before an input named "Email").
func labelsNext(els []Element, i int) bool {
	if i+1 >= len(els) || !els[i+1].Kind.Control() || els[i+1].Name == "" {
		return false
	}
	t := strings.TrimRight(els[i].Text, " :*")
	return strings.EqualFold(t, strings.TrimRight(els[i+1].Name, " :*"))
}

func indent(d int) string { return strings.Repeat("  ", min(d, 8)) }

func writeRegion(b *strings.Builder, r *Region, d int, page *url.URL) {
	if r == nil {
		return
	}
	b.WriteString(indent(d))
	b.WriteString("[" + r.ID)
	if r.Role != RoleBody {
		b.WriteString(" " + string(r.Role))
	}
	if r.Label != "" {
		fmt.Fprintf(b, " %q", neutral(r.Label))
	}
	if f := r.Form; f != nil {
		fmt.Fprintf(b, " %s %s", f.Method, display(page, f.Action))
		if f.Enctype != "application/x-www-form-urlencoded" {
			b.WriteString(" " + f.Enctype)
		}
	}
	b.WriteString("]\n")
}

func writeElement(b *strings.Builder, e *Element, ce *elem, c *compiler) {
	switch e.Kind {
	case KindHeading:
		b.WriteString(strings.Repeat("#", max(1, min(e.Level, 6))) + " ")
		b.WriteString(inlineText(ce, c, 1000))
		return
	case KindText:
		b.WriteString(inlineText(ce, c, maxTextContext))
		return
	}
	b.WriteString(e.ID + " ")
	switch e.Kind {
	case KindLink:
		fmt.Fprintf(b, "link %q", neutral(e.Name))
		switch {
		case e.JS:
			b.WriteString(" (js)")
		case e.Href != "":
			b.WriteString(" -> " + neutral(display(c.page, e.Href)))
		}
	case KindButton:
		fmt.Fprintf(b, "button[%s] %q", orDefault(e.Type, "button"), neutral(e.Name))
	case KindInput, KindTextArea:
		if e.Kind == KindTextArea {
			b.WriteString("textarea")
		} else {
			b.WriteString("input[" + e.Type + "]")
		}
		fmt.Fprintf(b, " %q", neutral(e.Name))
		if e.Field != "" {
			b.WriteString(" name=" + neutral(clip(clean(e.Field), 60)))
		}
		if e.Value != "" {
			fmt.Fprintf(b, " value=%q", neutral(clip(clean(e.Value), 80)))
		}
	case KindSelect:
		fmt.Fprintf(b, "select %q", neutral(e.Name))
		if e.Field != "" {
			b.WriteString(" name=" + neutral(clip(clean(e.Field), 60)))
		}
		for _, o := range e.Options {
			if o.Selected || (!e.Multiple && o.Value == e.Value) {
				fmt.Fprintf(b, " = %q", neutral(o.Label))
				break
			}
		}
		b.WriteString(" {")
		for i, o := range e.Options {
			if i == maxOptionsContext {
				b.WriteString("|…+" + strconv.Itoa(len(e.Options)-i))
				break
			}
			if i > 0 {
				b.WriteByte('|')
			}
			b.WriteString(neutral(clip(o.Label, 40)))
		}
		b.WriteString("}")
	case KindCheckbox, KindRadio:
		mark := " "
		if e.Checked {
			mark = "x"
		}
		if e.Kind == KindCheckbox {
			fmt.Fprintf(b, "checkbox [%s] %q", mark, neutral(e.Name))
		} else {
			fmt.Fprintf(b, "radio (%s) %q name=%s", mark, neutral(e.Name), neutral(clip(clean(e.Field), 60)))
		}
	case KindPrice:
		if e.Source == "text" || e.Source == "microdata" {
			fmt.Fprintf(b, "price %q", neutral(e.Text))
		} else {
			b.WriteString("price")
		}
		if p := e.Price; p != nil {
			fmt.Fprintf(b, " (%s)", strings.TrimSpace(p.Currency+" "+p.Amount))
		}
		if e.Source != "text" {
			b.WriteString(" from " + e.Source)
		}
	}
	if e.Required {
		b.WriteString(" required")
	}
	if e.Disabled {
		b.WriteString(" disabled")
	}
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// inlineText renders a text run with its links and prices as [label](id).
func inlineText(ce *elem, c *compiler, limit int) string {
	var b strings.Builder
	for _, s := range ce.segs {
		if b.Len() > limit*2 {
			break
		}
		if s.ref < 0 {
			b.WriteString(s.text)
			continue
		}
		r := c.elems[s.ref]
		fmt.Fprintf(&b, " [%s](%s) ", strings.NewReplacer("[", "(", "]", ")").Replace(clean(r.label())), r.ID)
	}
	return neutral(clip(clean(b.String()), limit))
}
