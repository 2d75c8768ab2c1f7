package formsubmit

import (
	"net/http"
	"net/url"
	"strings"

	"golang.org/x/net/html"

	"github.com/svc-gateway/svc/internal/errs"
)

// State is what an agent did to a form's controls, on top of the state
// the markup gives them. Both maps are keyed by control elements of the
// form; a key that is not one is refused, so that a stale reference cannot
// fill in some other field.
type State struct {
	// Values holds text typed into an input or textarea (one value) and
	// the options chosen in a select (their values; several only for a
	// multiple select).
	Values map[*html.Node][]string
	// Checked sets the checkedness of checkboxes and radio buttons. Checking
	// a radio button unchecks the others of its group.
	Checked map[*html.Node]bool
}

// Entry is one name-value pair of a form's entry list. File is true for a
// file input, which is submitted as an empty file: agents do not upload.
type Entry struct {
	Name  string
	Value string
	File  bool
}

// Submission is the request submitting a form makes, with the entry list
// it encodes (for audit and policy). Sending it is the caller's business:
// web sessions send it through the guarded fetcher like any navigation.
type Submission struct {
	Method      string // GET or POST
	URL         string // the action, with the query a GET submission carries
	Body        []byte // nil for GET
	ContentType string // of Body
	Entries     []Entry
}

// The enctypes a form can ask for.
const (
	EncURLEncoded = "application/x-www-form-urlencoded"
	EncMultipart  = "multipart/form-data"
	EncTextPlain  = "text/plain"
)

// Build returns the request that submitting form with submitter
// (nil for a submission without one, as form.submit() does; see
// DefaultButton for what pressing Enter would use) sends, after applying
// state, as the HTML Living Standard's form-submission algorithm does.
// pageURL is the URL of the page the form is on: the base for the action
// unless the document has a <base href>.
//
// The submitter's formaction, formmethod and formenctype override the
// form's attributes. GET replaces the action's query with the urlencoded
// entries; POST sends them urlencoded, as multipart/form-data or as
// text/plain. Text is always UTF-8, whatever accept-charset says. Errors are
// *errs.Error: Invalid for a submitter or state that does not fit the form,
// Forbidden for an action that is not http or https.
func Build(form, submitter *html.Node, state State, pageURL *url.URL) (*Submission, error) {
	if !isElement(form, "form") {
		return nil, errs.E(errs.Invalid, "invalid_form", "the target is not a form")
	}
	controls := Controls(form)
	if submitter != nil {
		if !IsSubmitButton(submitter) || !contains(controls, submitter) {
			return nil, errs.E(errs.Invalid, "invalid_submitter", "the submitter is not a submit button of this form")
		}
		if isDisabled(submitter) {
			return nil, errs.E(errs.Invalid, "invalid_submitter", "the submit button is disabled")
		}
	}
	entries, err := entryList(form, controls, submitter, state)
	if err != nil {
		return nil, err
	}

	method := strings.ToLower(submitterAttr(form, submitter, "method"))
	switch method {
	case "post", "dialog":
	default:
		method = "get"
	}
	if method == "dialog" {
		return nil, errs.E(errs.Invalid, "unsupported_form", "the form's method is dialog: in a browser it closes a dialog and sends nothing")
	}
	action, err := actionURL(form, submitter, pageURL)
	if err != nil {
		return nil, err
	}
	enctype := strings.ToLower(strings.TrimSpace(submitterAttr(form, submitter, "enctype")))
	if enctype != EncMultipart && enctype != EncTextPlain {
		enctype = EncURLEncoded
	}

	sub := &Submission{Entries: entries}
	if method == "get" {
		// The query is replaced, whatever the enctype; the fragment stays.
		action.RawQuery = urlencode(entries)
		action.ForceQuery = true
		sub.Method, sub.URL = http.MethodGet, action.String()
		return sub, nil
	}
	sub.Method, sub.URL = http.MethodPost, action.String()
	switch enctype {
	case EncMultipart:
		sub.Body, sub.ContentType = multipartBody(entries)
	case EncTextPlain:
		sub.Body, sub.ContentType = []byte(textPlain(entries)), EncTextPlain
	default:
		sub.Body, sub.ContentType = []byte(urlencode(entries)), EncURLEncoded
	}
	return sub, nil
}

// DefaultButton returns the form's default button, the first submit button
// among its controls in tree order, or nil. Implicit submission (pressing
// Enter in a field) submits with it when it is not disabled, and does not
// submit at all when it is.
func DefaultButton(form *html.Node) *html.Node {
	for _, c := range Controls(form) {
		if IsSubmitButton(c) {
			return c
		}
	}
	return nil
}

// submitterAttr returns the submitter's form<name> attribute when it has one,
// else the form's <name> attribute.
func submitterAttr(form, submitter *html.Node, name string) string {
	if submitter != nil {
		if v, ok := attr(submitter, "form"+name); ok {
			return v
		}
	}
	v, _ := attr(form, name)
	return v
}

// actionURL resolves the action against the document's base URL; an empty
// action is the page's own URL.
func actionURL(form, submitter *html.Node, pageURL *url.URL) (*url.URL, error) {
	if pageURL == nil {
		return nil, errs.E(errs.Internal, "internal", "a form submission needs the page's url")
	}
	action := strings.TrimSpace(submitterAttr(form, submitter, "action"))
	var u *url.URL
	if action == "" {
		copied := *pageURL
		u = &copied
	} else {
		ref, err := url.Parse(action)
		if err != nil {
			return nil, errs.Wrap(err, errs.Invalid, "invalid_form", "the form's action %q is not a valid url", action)
		}
		u = baseURL(form, pageURL).ResolveReference(ref)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, errs.E(errs.Forbidden, "scheme_not_allowed",
			"the form's action uses scheme %q; only http and https forms are submitted", u.Scheme)
	}
	// url.Parse accepts some hosts ("//::0") whose String does not parse
	// again; the request must be made from a URL that does.
	if again, err := url.Parse(u.String()); err != nil || again.Hostname() == "" {
		return nil, errs.E(errs.Invalid, "invalid_form", "the form's action %q does not give a valid url", action)
	}
	return u, nil
}

// baseURL is the document's base URL: the first <base href>, resolved
// against the page URL, or the page URL.
func baseURL(n *html.Node, pageURL *url.URL) *url.URL {
	var href string
	found := false
	walk(root(n), func(e *html.Node) {
		if !found && isElement(e, "base") {
			href, found = attr(e, "href")
		}
	})
	if !found {
		return pageURL
	}
	ref, err := url.Parse(strings.TrimSpace(href))
	if err != nil {
		return pageURL
	}
	return pageURL.ResolveReference(ref)
}

func contains(list []*html.Node, n *html.Node) bool {
	for _, c := range list {
		if c == n {
			return true
		}
	}
	return false
}
