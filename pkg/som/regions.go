package som

import (
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// Heuristic words in id and class attributes, for pages that declare no
// landmarks. Only whole words count (see hasToken).
var (
	adWords      = map[string]bool{"ad": true, "ads": true, "advert": true, "advertisement": true, "adsbygoogle": true, "sponsored": true, "dfp": true, "adslot": true, "adunit": true}
	consentWords = map[string]bool{"cookie": true, "cookies": true, "consent": true, "gdpr": true}
	bannerWords  = map[string]bool{"header": true, "masthead": true}
	navWords     = map[string]bool{"nav": true, "navbar": true, "menu": true, "navigation": true, "breadcrumbs": true, "breadcrumb": true}
	footerWords  = map[string]bool{"footer": true}
	asideWords   = map[string]bool{"sidebar": true, "related": true, "widget": true}
	mainWords    = map[string]bool{"main": true, "content": true, "maincontent": true}
)

// landmark decides whether n starts a region inside region cur, and of
// which role. Precedence: an explicit role, then the element, then id and
// class heuristics (flagged inferred).
func (c *compiler) landmark(n *html.Node, cur int) (role Role, label string, inferred, ok bool) {
	label = c.regionLabel(n)
	if r := strings.ToLower(firstField(attr(n, "role"))); r != "" && n.DataAtom != atom.Form {
		switch r {
		case "banner":
			return RoleBanner, label, false, true
		case "navigation":
			return RoleNavigation, label, false, true
		case "main":
			return RoleMain, label, false, true
		case "complementary":
			return RoleComplementary, label, false, true
		case "contentinfo":
			return RoleContentInfo, label, false, true
		case "search":
			return RoleSearch, label, false, true
		case "dialog", "alertdialog":
			return RoleDialog, label, false, true
		case "region":
			if label != "" {
				return RoleRegion, label, false, true
			}
		}
	}
	switch n.DataAtom {
	case atom.Form:
		return RoleForm, firstNonEmpty(label, clean(attr(n, "name")), clean(attr(n, "id"))), false, true
	case atom.Header:
		if !sectioned(n) {
			return RoleBanner, label, false, true
		}
	case atom.Footer:
		if !sectioned(n) {
			return RoleContentInfo, label, false, true
		}
	case atom.Nav:
		return RoleNavigation, label, false, true
	case atom.Main:
		return RoleMain, label, false, true
	case atom.Aside:
		return RoleComplementary, label, false, true
	case atom.Search:
		return RoleSearch, label, false, true
	case atom.Dialog:
		return RoleDialog, label, false, true
	case atom.Section:
		if label != "" {
			return RoleRegion, label, false, true
		}
		if h := firstHeading(n); h != "" {
			return RoleRegion, h, true, true
		}
	}
	if inline[n.DataAtom] || n.DataAtom == atom.Body || n.DataAtom == atom.Html {
		return "", "", false, false
	}
	words := attr(n, "id") + " " + attr(n, "class")
	if strings.TrimSpace(words) == "" {
		return "", "", false, false
	}
	curRole := c.regions[cur].Role
	switch {
	case hasToken(words, adWords) != "":
		return RoleAdvertisement, label, true, true
	case hasToken(words, consentWords) != "" && curRole != RoleDialog:
		return RoleDialog, label, true, true
	}
	if curRole != RoleBody && !(curRole == RoleMain && c.regions[cur].Inferred) {
		return "", "", false, false
	}
	switch {
	case hasToken(words, bannerWords) != "" && !sectioned(n):
		return RoleBanner, label, true, true
	case hasToken(words, footerWords) != "" && !sectioned(n):
		return RoleContentInfo, label, true, true
	case hasToken(words, navWords) != "":
		return RoleNavigation, label, true, true
	case hasToken(words, asideWords) != "":
		return RoleComplementary, label, true, true
	case curRole == RoleBody && !c.sc.hasMain && !c.mainSeen && hasToken(words, mainWords) != "":
		c.mainSeen = true
		return RoleMain, label, true, true
	}
	return "", "", false, false
}

// sectioned reports whether a header or footer sits inside sectioning
// content, where it belongs to that section, not to the page.
func sectioned(n *html.Node) bool {
	for p := n.Parent; p != nil; p = p.Parent {
		switch p.DataAtom {
		case atom.Article, atom.Aside, atom.Main, atom.Nav, atom.Section:
			return true
		}
		if r := strings.ToLower(attr(p, "role")); r == "main" || r == "article" {
			return true
		}
	}
	return false
}

// firstHeading returns the text of a heading that is n's first element
// child, or the first element child of that: a section named by its heading.
func firstHeading(n *html.Node) string {
	for depth, ch := 0, n.FirstChild; ch != nil && depth < 2; {
		if ch.Type != html.ElementNode {
			ch = ch.NextSibling
			continue
		}
		if headingLevel(ch) > 0 {
			return clip(clean(textOf(ch, 400)), 120)
		}
		ch, depth = ch.FirstChild, depth+1
	}
	return ""
}

// regionLabel is a region's accessible name: aria-label, then
// aria-labelledby.
func (c *compiler) regionLabel(n *html.Node) string {
	if l := clean(attr(n, "aria-label")); l != "" {
		return clip(l, 120)
	}
	return clip(c.labelledBy(n), 120)
}

// openRegion starts a region for n inside parent.
func (c *compiler) openRegion(n *html.Node, parent int, role Role, label string, inferred bool) int {
	p := c.regions[parent]
	r := &region{node: n, parent: parent, chrome: p.chrome || role.Chrome()}
	r.Role, r.Label, r.Inferred = role, label, inferred
	var key strings.Builder
	key.WriteString(string(role))
	key.WriteString("|")
	key.WriteString(keyName(label))
	key.WriteString("|")
	key.WriteString(keyName(attr(n, "id")))
	if role == RoleForm {
		f := c.formOf(n)
		r.Form = f
		key.WriteString("|")
		key.WriteString(f.Method)
		key.WriteString(" ")
		key.WriteString(actionPath(f.Action))
		key.WriteString(" ")
		key.WriteString(keyName(attr(n, "name")))
	}
	r.key = key.String()
	c.regions = append(c.regions, r)
	return len(c.regions) - 1
}

// formOf reads a form's submission parameters as the HTML form-submission
// algorithm would: method GET unless POST (dialog is not a submission),
// action defaulting to the page, enctype defaulting to urlencoded.
func (c *compiler) formOf(n *html.Node) *Form {
	f := &Form{Method: "GET", Enctype: "application/x-www-form-urlencoded", Fields: []string{}}
	if strings.EqualFold(strings.TrimSpace(attr(n, "method")), "post") {
		f.Method = "POST"
	}
	if a, ok := attrOK(n, "action"); ok && strings.TrimSpace(a) != "" {
		f.Action = resolve(c.base, a)
	} else {
		f.Action = c.page.String()
	}
	switch e := strings.ToLower(strings.TrimSpace(attr(n, "enctype"))); e {
	case "multipart/form-data", "text/plain":
		f.Enctype = e
	}
	f.Name = clean(firstNonEmpty(attr(n, "name"), attr(n, "id")))
	if t := strings.TrimSpace(attr(n, "target")); t != "" && !strings.EqualFold(t, "_self") {
		f.Target = t
	}
	return f
}

// actionPath is the part of a form action that identifies the form: the
// path, lowercased, digits masked. The host is left out so that a form
// whose target moves host keeps its id and the move shows as a change.
func actionPath(action string) string {
	if i := strings.Index(action, "://"); i >= 0 {
		action = action[i+3:]
		if j := strings.IndexByte(action, '/'); j >= 0 {
			action = action[j:]
		} else {
			action = "/"
		}
	}
	if i := strings.IndexAny(action, "?#"); i >= 0 {
		action = action[:i]
	}
	return keyName(action)
}

func firstField(s string) string {
	f := strings.Fields(s)
	if len(f) == 0 {
		return ""
	}
	return f[0]
}
