package som

// Version names the snapshot format and IDScheme the id algorithm. A
// previous snapshot is reconciled against only when its IDScheme matches,
// because ids minted by another scheme cannot be compared.
const (
	Version  = "v1"
	IDScheme = "h1"
)

// Snapshot is a compiled page: what it is (Meta), how it is laid out
// (Regions), what can be read or acted on (Elements) and the prompt-ready
// text (Context). Regions and Elements are in document order.
type Snapshot struct {
	Meta     Meta      `json:"meta"`
	Regions  []Region  `json:"regions"`
	Elements []Element `json:"elements"`
	Context  string    `json:"context"`
}

// Meta describes the page as a whole.
type Meta struct {
	URL         string `json:"url"`
	Title       string `json:"title,omitempty"`
	Lang        string `json:"lang,omitempty"`
	Canonical   string `json:"canonical,omitempty"`
	ContentType string `json:"contentType,omitempty"`
	Charset     string `json:"charset"`
	// HTMLBytes is the size of the page as fetched; SOMBytes the size of
	// Context, the part a prompt carries. Their ratio is what the SOM saves.
	HTMLBytes  int         `json:"htmlBytes"`
	SOMBytes   int         `json:"somBytes"`
	EstTokens  int         `json:"estTokens"` // SOMBytes / 4
	Counts     Counts      `json:"counts"`
	Structured *Structured `json:"structured,omitempty"`
	Truncated  *Truncated  `json:"truncated,omitempty"`
	SOMVersion string      `json:"somVersion"`
	IDScheme   string      `json:"idScheme"`
}

// Counts are the sizes of the snapshot, and FormTagsRaw the forms the parsed
// document holds, so a caller can see when the parser dropped nested ones.
type Counts struct {
	Elements    int `json:"elements"`
	Interactive int `json:"interactive"`
	Regions     int `json:"regions"`
	Forms       int `json:"forms"`
	Links       int `json:"links"`
	Prices      int `json:"prices"`
}

// Truncated says a guard stopped the compile early; the snapshot holds what
// was read before it.
type Truncated struct {
	// Reasons are the guards that fired: "input", "depth", "elements".
	Reasons []string `json:"reasons"`
	// Dropped counts the elements and subtrees left out.
	Dropped int `json:"dropped"`
}

// Structured holds the product facts a page declares in JSON-LD, microdata
// or Open Graph. They come before anything guessed from visible text.
type Structured struct {
	Types        []string `json:"types,omitempty"`
	Name         string   `json:"name,omitempty"`
	Brand        string   `json:"brand,omitempty"`
	SKU          string   `json:"sku,omitempty"`
	Price        *Price   `json:"price,omitempty"`
	Availability string   `json:"availability,omitempty"`
}

// Region is a part of the page: a landmark, a form, a named section.
type Region struct {
	ID       string `json:"id"`
	Role     Role   `json:"role"`
	Label    string `json:"label,omitempty"`
	Inferred bool   `json:"inferred,omitempty"` // found by a heuristic, not declared
	Parent   string `json:"parent,omitempty"`
	Form     *Form  `json:"form,omitempty"`
}

// Form is what a session needs to submit a form region.
type Form struct {
	Method  string   `json:"method"`           // GET or POST
	Action  string   `json:"action"`           // resolved against the page URL
	Enctype string   `json:"enctype"`          // as the form-submission algorithm reads it
	Name    string   `json:"name,omitempty"`   // the name or id attribute
	Fields  []string `json:"fields"`           // element ids of its controls, hidden inputs included
	Target  string   `json:"target,omitempty"` // the target attribute, when not _self
}

// Element is one thing on the page a model may read or act on.
type Element struct {
	ID     string `json:"id"`
	Kind   Kind   `json:"kind"`
	Region string `json:"region"`
	// Name is the accessible name: label, aria-label, placeholder, text.
	Name string `json:"name,omitempty"`
	// Text is a text block's or heading's text.
	Text string `json:"text,omitempty"`
	// Href is a link's target, resolved against the page URL.
	Href string `json:"href,omitempty"`
	// Type is an input's or button's type attribute, lowercased.
	Type string `json:"type,omitempty"`
	// Field is the control's name attribute, the key it submits under.
	Field string `json:"field,omitempty"`
	// Value is the current value; never a password's, never a hidden input's.
	Value    string   `json:"value,omitempty"`
	Required bool     `json:"required,omitempty"`
	Disabled bool     `json:"disabled,omitempty"`
	Checked  bool     `json:"checked,omitempty"`
	Multiple bool     `json:"multiple,omitempty"`
	Options  []Option `json:"options,omitempty"`
	Price    *Price   `json:"price,omitempty"`
	Level    int      `json:"level,omitempty"`  // heading level
	Anchor   string   `json:"anchor,omitempty"` // the heading this element sits under
	Form     string   `json:"form,omitempty"`   // the form region the control belongs to
	// JS marks a link whose href is javascript:, unactionable without a renderer.
	JS bool `json:"js,omitempty"`
	// Source says where a price came from: jsonld, microdata, opengraph, text.
	Source string `json:"source,omitempty"`
}

// Option is one choice of a select.
type Option struct {
	Value    string `json:"value"`
	Label    string `json:"label"`
	Selected bool   `json:"selected,omitempty"`
}

// Price is an amount in a currency. Amount is a decimal string as the page
// wrote it, normalised ("1,299.00" becomes "1299.00"), so JSON stays exact.
type Price struct {
	Amount   string `json:"amount"`
	Currency string `json:"currency,omitempty"` // ISO 4217 when known
	Raw      string `json:"raw,omitempty"`
}

// Kind is what an element is.
type Kind string

// The element kinds.
const (
	KindLink     Kind = "link"
	KindButton   Kind = "button"
	KindInput    Kind = "input"
	KindTextArea Kind = "textarea"
	KindSelect   Kind = "select"
	KindCheckbox Kind = "checkbox"
	KindRadio    Kind = "radio"
	KindHidden   Kind = "hidden" // input[type=hidden]: submitted, never rendered
	KindHeading  Kind = "heading"
	KindText     Kind = "text"
	KindPrice    Kind = "price"
	KindImage    Kind = "image"
)

// Interactive reports whether a session can act on elements of kind k.
func (k Kind) Interactive() bool {
	switch k {
	case KindLink, KindButton, KindInput, KindTextArea, KindSelect, KindCheckbox, KindRadio:
		return true
	}
	return false
}

// Control reports whether k is a form control, submitted with its form.
func (k Kind) Control() bool {
	switch k {
	case KindInput, KindTextArea, KindSelect, KindCheckbox, KindRadio, KindHidden:
		return true
	}
	return false
}

// Role is what a region is, after ARIA's landmark roles.
type Role string

// The region roles.
const (
	RoleBody          Role = "body"
	RoleBanner        Role = "banner"
	RoleNavigation    Role = "navigation"
	RoleMain          Role = "main"
	RoleComplementary Role = "complementary"
	RoleContentInfo   Role = "contentinfo"
	RoleForm          Role = "form"
	RoleSearch        Role = "search"
	RoleDialog        Role = "dialog"
	RoleRegion        Role = "region"
	RoleAdvertisement Role = "advertisement"
)

// short is the role's id prefix.
func (r Role) short() string {
	switch r {
	case RoleBanner:
		return "banner"
	case RoleNavigation:
		return "nav"
	case RoleComplementary:
		return "aside"
	case RoleContentInfo:
		return "footer"
	case RoleAdvertisement:
		return "ad"
	case RoleRegion:
		return "region"
	}
	return string(r)
}

// Chrome reports whether a region of role r is site furniture repeated on
// every page: changes there are noise.
func (r Role) Chrome() bool {
	return r == RoleBanner || r == RoleNavigation || r == RoleContentInfo
}
