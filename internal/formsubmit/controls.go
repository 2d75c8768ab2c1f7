package formsubmit

import (
	"strings"

	"golang.org/x/net/html"
)

// This file answers the HTML Living Standard's questions about form
// controls on a parsed tree: which controls belong to a form, which are
// disabled, what type an input is, what a select's options are. A script
// engine would hold this as live state; here it is derived from the markup,
// which is what a form looks like before anyone touches it.

// attr returns the value of n's attribute key (lowercase) and whether it is
// present.
func attr(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Namespace == "" && a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

func hasAttr(n *html.Node, key string) bool {
	_, ok := attr(n, key)
	return ok
}

// isElement reports whether n is the HTML element tag.
func isElement(n *html.Node, tag string) bool {
	return n != nil && n.Type == html.ElementNode && n.Namespace == "" && n.Data == tag
}

// inputTypes are the states of input's type attribute; anything else is
// the Text state.
var inputTypes = map[string]bool{
	"hidden": true, "text": true, "search": true, "tel": true, "url": true, "email": true,
	"password": true, "date": true, "month": true, "week": true, "time": true,
	"datetime-local": true, "number": true, "range": true, "color": true, "checkbox": true,
	"radio": true, "file": true, "submit": true, "image": true, "reset": true, "button": true,
}

// inputType returns the state of an input's type attribute.
func inputType(n *html.Node) string {
	t, _ := attr(n, "type")
	t = strings.ToLower(t)
	if !inputTypes[t] {
		return "text"
	}
	return t
}

// buttonType returns a button element's type: submit, reset or button;
// a missing or unknown value is submit.
func buttonType(n *html.Node) string {
	t, _ := attr(n, "type")
	switch t = strings.ToLower(t); t {
	case "reset", "button":
		return t
	}
	return "submit"
}

// isButton reports whether n is a button in the standard's sense: buttons
// other than the submitter never contribute to a submission.
func isButton(n *html.Node) bool {
	if isElement(n, "button") {
		return true
	}
	if isElement(n, "input") {
		switch inputType(n) {
		case "submit", "image", "reset", "button":
			return true
		}
	}
	return false
}

// IsSubmitButton reports whether n can submit its form.
func IsSubmitButton(n *html.Node) bool {
	switch {
	case isElement(n, "button"):
		return buttonType(n) == "submit"
	case isElement(n, "input"):
		t := inputType(n)
		return t == "submit" || t == "image"
	}
	return false
}

// isSubmittable reports whether n is a submittable element (object, which
// never submits anything, and form-associated custom elements aside).
func isSubmittable(n *html.Node) bool {
	return isElement(n, "button") || isElement(n, "input") || isElement(n, "select") || isElement(n, "textarea")
}

// isDisabled reports whether a control is disabled: by its own attribute,
// or by a disabled fieldset ancestor unless it sits inside that fieldset's
// first legend.
func isDisabled(n *html.Node) bool {
	if hasAttr(n, "disabled") {
		return true
	}
	child := n
	for p := n.Parent; p != nil; child, p = p, p.Parent {
		if isElement(p, "fieldset") && hasAttr(p, "disabled") {
			if legend := firstLegend(p); legend == nil || legend != child {
				return true
			}
		}
	}
	return false
}

// firstLegend returns the fieldset's first legend child, or nil.
func firstLegend(fieldset *html.Node) *html.Node {
	for c := fieldset.FirstChild; c != nil; c = c.NextSibling {
		if isElement(c, "legend") {
			return c
		}
	}
	return nil
}

func hasAncestor(n *html.Node, tag string) bool {
	for p := n.Parent; p != nil; p = p.Parent {
		if isElement(p, tag) {
			return true
		}
	}
	return false
}

// root returns the document n belongs to (or the top of its tree).
func root(n *html.Node) *html.Node {
	for n.Parent != nil {
		n = n.Parent
	}
	return n
}

// walk calls fn for every element under n in tree order, skipping the
// contents of template elements, which are inert.
func walk(n *html.Node, fn func(*html.Node)) {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type != html.ElementNode {
			continue
		}
		fn(c)
		if !isElement(c, "template") {
			walk(c, fn)
		}
	}
}

// Controls returns the submittable controls whose form owner is form,
// in tree order: its descendants, minus those whose form attribute points
// elsewhere, plus elements anywhere in the document whose form attribute
// names form's id.
//
// The parser's form-element pointer, which can associate a control with a
// form that does not contain it (a form opened inside a table), is not kept
// in the parsed tree, so such controls are not found.
func Controls(form *html.Node) []*html.Node {
	doc := root(form)
	ids := map[string]*html.Node{}
	walk(doc, func(n *html.Node) {
		if id, ok := attr(n, "id"); ok && id != "" {
			if _, seen := ids[id]; !seen {
				ids[id] = n
			}
		}
	})
	var out []*html.Node
	walk(doc, func(n *html.Node) {
		if isSubmittable(n) && formOwner(n, ids) == form {
			out = append(out, n)
		}
	})
	return out
}

// formOwner returns the form n is associated with, or nil.
func formOwner(n *html.Node, ids map[string]*html.Node) *html.Node {
	if id, ok := attr(n, "form"); ok {
		if f := ids[id]; isElement(f, "form") {
			return f
		}
		return nil
	}
	for p := n.Parent; p != nil; p = p.Parent {
		if isElement(p, "form") {
			return p
		}
	}
	return nil
}

// options returns a select's list of options: option children, and option
// children of optgroup children.
func options(sel *html.Node) []*html.Node {
	var out []*html.Node
	for c := sel.FirstChild; c != nil; c = c.NextSibling {
		switch {
		case isElement(c, "option"):
			out = append(out, c)
		case isElement(c, "optgroup"):
			for o := c.FirstChild; o != nil; o = o.NextSibling {
				if isElement(o, "option") {
					out = append(out, o)
				}
			}
		}
	}
	return out
}

// optionDisabled reports whether an option is disabled, itself or through
// its optgroup.
func optionDisabled(o *html.Node) bool {
	return hasAttr(o, "disabled") || isElement(o.Parent, "optgroup") && hasAttr(o.Parent, "disabled")
}

// optionValue is the option's value attribute, or its text with ASCII
// whitespace stripped and collapsed.
func optionValue(o *html.Node) string {
	if v, ok := attr(o, "value"); ok {
		return v
	}
	return strings.Join(strings.Fields(text(o)), " ")
}

// text is the concatenated text of n's descendants.
func text(n *html.Node) string {
	var b strings.Builder
	var rec func(*html.Node)
	rec = func(n *html.Node) {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type == html.TextNode {
				b.WriteString(c.Data)
			}
			rec(c)
		}
	}
	rec(n)
	return b.String()
}

// isMultiple reports whether a select takes several options.
func isMultiple(sel *html.Node) bool { return hasAttr(sel, "multiple") }

// defaultSelected returns the options a select shows as selected before
// anyone touches it: those with the selected attribute (only the last one
// for a single select), or else, for a single select displayed as a
// drop-down, the first option that is not disabled.
func defaultSelected(sel *html.Node) map[*html.Node]bool {
	opts := options(sel)
	out := map[*html.Node]bool{}
	var last *html.Node
	for _, o := range opts {
		if hasAttr(o, "selected") {
			if isMultiple(sel) {
				out[o] = true
			}
			last = o
		}
	}
	if isMultiple(sel) {
		return out
	}
	if last != nil {
		out[last] = true
		return out
	}
	if displaySize(sel) == 1 {
		for _, o := range opts {
			if !optionDisabled(o) {
				out[o] = true
				break
			}
		}
	}
	return out
}

// displaySize is a single select's size: 1 unless a valid size above 1 is
// given.
func displaySize(sel *html.Node) int {
	s, _ := attr(sel, "size")
	n := 0
	for _, c := range strings.TrimSpace(s) {
		if c < '0' || c > '9' || n > 1000 {
			return 1
		}
		n = n*10 + int(c-'0')
	}
	if n > 1 {
		return n
	}
	return 1
}

// PasswordFields names the form's password inputs, whose values a caller
// may need to keep out of what it shows or records.
func PasswordFields(form *html.Node) map[string]bool {
	out := map[string]bool{}
	for _, c := range Controls(form) {
		if name, _ := attr(c, "name"); name != "" && isElement(c, "input") && inputType(c) == "password" {
			out[name] = true
		}
	}
	return out
}
