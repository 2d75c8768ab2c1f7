package formsubmit

import (
	"strings"
	"unicode"

	"golang.org/x/net/html"

	"github.com/svc-gateway/svc/internal/errs"
)

// entryList constructs the entry list of the HTML Living Standard
// ("constructing the entry list"): in tree order, skipping controls inside a
// datalist, disabled controls, buttons other than the submitter, unchecked
// checkboxes and radio buttons, and controls without a name; an image
// submitter gives name.x and name.y; a select gives each selected option
// that is not disabled; a checkbox or radio without a value gives "on"; a
// file input an empty file; a hidden _charset_ the charset; dirname adds
// the direction after the control's own entry.
func entryList(form *html.Node, controls []*html.Node, submitter *html.Node, state State) ([]Entry, error) {
	if err := checkState(controls, state); err != nil {
		return nil, err
	}
	checked := checkedness(controls, state)
	var out []Entry
	for _, c := range controls {
		if hasAncestor(c, "datalist") || isDisabled(c) || isButton(c) && c != submitter {
			continue
		}
		typ := ""
		if isElement(c, "input") {
			typ = inputType(c)
		}
		if (typ == "checkbox" || typ == "radio") && !checked[c] {
			continue
		}
		name, _ := attr(c, "name")
		if typ == "image" {
			if name != "" {
				name += "."
			}
			// The selected coordinate: an agent clicks the image's origin.
			out = append(out, Entry{Name: name + "x", Value: "0"}, Entry{Name: name + "y", Value: "0"})
			continue
		}
		if name == "" {
			continue
		}
		switch {
		case isElement(c, "select"):
			for _, o := range selected(c, state) {
				out = append(out, Entry{Name: name, Value: optionValue(o)})
			}
		case typ == "checkbox" || typ == "radio":
			v, ok := attr(c, "value")
			if !ok {
				v = "on"
			}
			out = append(out, Entry{Name: name, Value: v})
		case typ == "file":
			out = append(out, Entry{Name: name, File: true})
		case typ == "hidden" && strings.EqualFold(name, "_charset_"):
			out = append(out, Entry{Name: name, Value: "UTF-8"})
		default:
			v := controlValue(c, typ, state)
			out = append(out, Entry{Name: name, Value: v})
			if dirname, _ := attr(c, "dirname"); dirname != "" && autoDirectional(c, typ) {
				out = append(out, Entry{Name: dirname, Value: direction(c, v)})
			}
		}
	}
	return out, nil
}

// checkState refuses state that does not fit the form: keys that are not
// its controls, input into disabled, read-only or hidden controls, typed
// text for a control that is not typed into, and select values that are not
// listed options.
func checkState(controls []*html.Node, state State) error {
	for n, vals := range state.Values {
		if !contains(controls, n) {
			return errs.E(errs.Invalid, "invalid_form_value", "the element is not a control of this form")
		}
		if err := CheckValue(n, vals); err != nil {
			return err
		}
	}
	for n := range state.Checked {
		if !contains(controls, n) {
			return errs.E(errs.Invalid, "invalid_form_value", "the element is not a control of this form")
		}
		if t := inputType(n); !isElement(n, "input") || t != "checkbox" && t != "radio" {
			return errs.E(errs.Invalid, "invalid_form_value", "%s cannot be checked; only checkboxes and radio buttons can", describe(n))
		}
		if isDisabled(n) {
			return errs.E(errs.Invalid, "invalid_form_value", "%s is disabled", describe(n))
		}
	}
	return nil
}

// CheckValue reports whether values can be given to the control n: one
// string typed into a text-like input or a textarea that is neither
// disabled nor read-only, or for a select, values that each name one of its
// listed, enabled options (one value unless it is a multiple select). The
// session layer calls it when an agent types or selects, so that a bad value
// is refused then rather than at submission.
func CheckValue(n *html.Node, values []string) error {
	switch {
	case isElement(n, "select"):
		if isDisabled(n) {
			return errs.E(errs.Invalid, "invalid_form_value", "%s is disabled", describe(n))
		}
		if !isMultiple(n) && len(values) != 1 {
			return errs.E(errs.Invalid, "invalid_form_value", "%s takes exactly one option", describe(n))
		}
		for _, v := range values {
			o := findOption(n, v)
			if o == nil {
				return errs.E(errs.Invalid, "invalid_option", "%q is not one of the options of %s (options: %s)",
					v, describe(n), listOptions(n))
			}
			if optionDisabled(o) {
				return errs.E(errs.Invalid, "invalid_option", "option %q of %s is disabled", v, describe(n))
			}
		}
		return nil
	case isElement(n, "textarea"), isElement(n, "input") && typedInto(inputType(n)):
		if len(values) != 1 {
			return errs.E(errs.Invalid, "invalid_form_value", "%s takes exactly one value", describe(n))
		}
		if isDisabled(n) {
			return errs.E(errs.Invalid, "invalid_form_value", "%s is disabled", describe(n))
		}
		if hasAttr(n, "readonly") {
			return errs.E(errs.Invalid, "invalid_form_value", "%s is read-only", describe(n))
		}
		return nil
	}
	return errs.E(errs.Invalid, "invalid_form_value", "%s cannot be typed into", describe(n))
}

// typedInto reports whether an input type takes typed text. Hidden inputs,
// buttons, checkboxes, radio buttons and files do not.
func typedInto(typ string) bool {
	switch typ {
	case "hidden", "checkbox", "radio", "file", "submit", "image", "reset", "button":
		return false
	}
	return true
}

// describe names a control for an error message.
func describe(n *html.Node) string {
	kind := n.Data
	if isElement(n, "input") {
		kind = inputType(n) + " input"
	}
	if name, _ := attr(n, "name"); name != "" {
		return kind + " " + `"` + name + `"`
	}
	return "this " + kind
}

func findOption(sel *html.Node, value string) *html.Node {
	for _, o := range options(sel) {
		if optionValue(o) == value {
			return o
		}
	}
	return nil
}

func listOptions(sel *html.Node) string {
	var vals []string
	for _, o := range options(sel) {
		if len(vals) == 20 {
			vals = append(vals, "…")
			break
		}
		vals = append(vals, `"`+optionValue(o)+`"`)
	}
	return strings.Join(vals, ", ")
}

// selected returns a select's selected options: the agent's choice, or the
// markup's default.
func selected(sel *html.Node, state State) []*html.Node {
	var out []*html.Node
	if vals, ok := state.Values[sel]; ok {
		want := map[*html.Node]bool{}
		for _, v := range vals {
			want[findOption(sel, v)] = true
		}
		for _, o := range options(sel) {
			if want[o] && !optionDisabled(o) {
				out = append(out, o)
			}
		}
		return out
	}
	def := defaultSelected(sel)
	for _, o := range options(sel) {
		if def[o] && !optionDisabled(o) {
			out = append(out, o)
		}
	}
	return out
}

// checkedness returns the checked checkboxes and radio buttons: the markup's
// checked attribute (in a radio group the last checked one wins, as the
// parser leaves it), then the agent's changes, a checked radio button
// unchecking the rest of its group.
func checkedness(controls []*html.Node, state State) map[*html.Node]bool {
	out := map[*html.Node]bool{}
	groups := map[string][]*html.Node{}
	for _, c := range controls {
		if !isElement(c, "input") {
			continue
		}
		switch inputType(c) {
		case "checkbox":
			out[c] = hasAttr(c, "checked")
		case "radio":
			name, _ := attr(c, "name")
			if hasAttr(c, "checked") {
				if name != "" {
					for _, other := range groups[name] {
						out[other] = false
					}
				}
				out[c] = true
			}
			if name != "" {
				groups[name] = append(groups[name], c)
			}
		}
	}
	// Apply the agent's changes in tree order so that the outcome does not
	// depend on map order.
	for _, c := range controls {
		on, ok := state.Checked[c]
		if !ok {
			continue
		}
		if on && inputType(c) == "radio" {
			name, _ := attr(c, "name")
			if name != "" {
				for _, other := range groups[name] {
					out[other] = false
				}
			}
		}
		out[c] = on
	}
	return out
}

// controlValue is the value of a text-like input or textarea: the agent's
// text, else the markup's, sanitized as the input type's value sanitization
// algorithm does for the types where that is a matter of line breaks and
// spaces. (Other types' sanitization, such as emptying an invalid number,
// is the server's to judge.)
func controlValue(c *html.Node, typ string, state State) string {
	var v string
	if vals, ok := state.Values[c]; ok && len(vals) == 1 {
		v = vals[0]
	} else if isElement(c, "textarea") {
		v = text(c)
	} else {
		v, _ = attr(c, "value")
	}
	if isElement(c, "textarea") {
		// The API value: line breaks normalised to LF; encoding makes CRLF.
		return strings.ReplaceAll(strings.ReplaceAll(v, "\r\n", "\n"), "\r", "\n")
	}
	switch typ {
	case "text", "search", "tel", "password":
		v = stripNewlines(v)
	case "url", "email":
		v = strings.Trim(stripNewlines(v), "\t\n\f\r ")
	}
	return v
}

func stripNewlines(s string) string {
	return strings.NewReplacer("\r", "", "\n", "").Replace(s)
}

// autoDirectional reports whether dirname applies to the control: textareas
// and inputs of the text-like and button types.
func autoDirectional(c *html.Node, typ string) bool {
	if isElement(c, "textarea") {
		return true
	}
	switch typ {
	case "hidden", "text", "search", "tel", "url", "email", "password", "submit", "reset", "button":
		return true
	}
	return false
}

// direction is the control's directionality, "ltr" or "rtl": from the dir
// attribute of the control or its nearest ancestor that has one; dir=auto
// on the control looks at the first strong character of its value.
func direction(c *html.Node, value string) string {
	for n := c; n != nil; n = n.Parent {
		if n.Type != html.ElementNode {
			continue
		}
		d, ok := attr(n, "dir")
		if !ok {
			continue
		}
		switch strings.ToLower(d) {
		case "rtl":
			return "rtl"
		case "ltr":
			return "ltr"
		case "auto":
			if n == c {
				return firstStrong(value)
			}
			return firstStrong(text(n))
		}
	}
	return "ltr"
}

// firstStrong returns the direction of the first strongly directional
// character of s, "ltr" when there is none.
func firstStrong(s string) string {
	for _, r := range s {
		switch {
		case unicode.In(r, unicode.Hebrew, unicode.Arabic, unicode.Syriac, unicode.Thaana, unicode.Nko):
			return "rtl"
		case unicode.IsLetter(r):
			return "ltr"
		}
	}
	return "ltr"
}
