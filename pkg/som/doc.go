// Package som compiles a web page into a Semantic Object Model (SOM): a
// compact, stable description of what a page says and what can be done on
// it, for models to read and for programs to act on. svc uses it for its
// web fetches and sessions; it does no network or file access and keeps no
// mutable global state, so it is usable on its own.
//
// # Use
//
// Give Compile the bytes of a page, its Content-Type and the URL it was
// finally served from. It returns a Snapshot (JSON-ready; Snapshot.Context
// is the text to put in a prompt) and the Document its ids point into. Keep
// the Snapshot: passed as Input.Previous when the same URL is compiled
// again, it lets unchanged elements keep their ids, and Diff tells what
// changed between the two and how much it matters. Fetching the page, and
// deciding whether its URL may be fetched at all (see package
// github.com/svc-gateway/svc/pkg/netguard), is the caller's job. Compile may
// be called from many goroutines at once, and the package never changes
// what it returned.
//
// To act on an element a model chose from a snapshot, Resolve its id in
// the Document of the page as it is now, against the snapshot the model
// saw: the node comes back only if the element still is what it was.
//
// # Errors
//
// Each failure matches one value with errors.Is:
//
//	ErrInvalidURL  Compile: the page URL is not an absolute http or https URL
//	ErrNotFound    Resolve: no element or form has the id on this page; errors.As
//	               gives the *NotFoundError
//	ErrStale       Resolve: the element changed or cannot be acted on; errors.As
//	               gives the *StaleError; read the page again
//
// and a *CompileError is a bug Compile recovered from (a panic, or a parser
// failure), never the page's fault: any HTML compiles.
//
// The snapshot format is named by Version and the id algorithm by
// IDScheme; a previous snapshot of another IDScheme is not reconciled.
//
// # Compile
//
// Compile decodes the page (byte order mark, Content-Type charset, <meta>,
// then UTF-8 or windows-1252), parses it with golang.org/x/net/html, reads
// structured data first (JSON-LD including @graph, microdata, Open Graph),
// then walks the visible tree once. Script, style, templates, embedded
// documents, the hidden attribute, inline display:none, visibility:hidden,
// far-off-screen positioning and aria-hidden on inline elements are left
// out; aria-hidden on blocks is kept because consent walls put it on whole
// pages.
//
// Regions come from explicit roles, then landmark elements (header and
// footer only outside sectioning content), every <form>, named sections,
// and for pages without landmarks whole words in id and class attributes
// (header, nav, footer, sidebar, cookie, ad …; such regions are marked
// inferred). Elements are links, buttons, inputs, selects with their
// options, textareas, checkboxes, radios, hidden inputs (kept for submission,
// never rendered, their values never copied), headings, text blocks with
// their inline links, prices and images with alt text. Controls are named
// in accname order: aria-label, aria-labelledby, label[for], a wrapping
// label, placeholder, title, then a short text just before them.
//
// # Ids
//
// An element id is "e_" and 8 base32 characters of a SHA-256 over the key
// of its region, its kind, its identity key (see identityKey: name and
// target for links, field for controls, anchor heading and first words for
// text, digits masked everywhere) and its occurrence among equal keys in
// that region. A region id is "r_<role>_" and 6 characters of the hash of
// role, label, id attribute (for forms, method, action path and name) and
// occurrence among equal keys. Nothing positional goes in, so a banner
// inserted at the top or an ad block mid-page moves no other id; a hash
// collision is re-salted in document order.
//
// Given the previous snapshot of the same URL, Compile reconciles: elements
// whose group (region, kind, key) is unique in both are anchors, crossing
// anchors are cut to the longest ordered run, and between anchors the rest
// pair with the previous elements of the same group in order, then with a
// compatible element (same region role and kind, and same target, field,
// level or mostly the same words). Paired elements keep their previous id;
// new ones never take an id the previous snapshot used.
//
// Document maps ids back to parsed nodes, and Document.Resolve refuses an
// id whose element no longer has the Fingerprint the caller saw (kind,
// name, target, field, type, form action and method, region role).
//
// # Context
//
// Snapshot.Context is a line-oriented rendering for a prompt: a header svc
// writes (URL, sizes, counts, truncation), then the page between
// "# BEGIN UNTRUSTED PAGE CONTENT <nonce>" and "# END UNTRUSTED PAGE
// CONTENT <nonce>". Page text is reduced to single lines with control and
// format characters removed, every spelling of "untrusted page content" in
// it is rewritten, and the nonce is a hash of the fenced text itself, so a
// page cannot close the fence. Ids appear on what can be acted on and on
// prices; text blocks show their first 240 bytes and inline links as
// [label](id); advertising regions are collapsed to a count.
//
// # Guards
//
// Limits bound the HTML read (10 MiB), the DOM elements visited (80,000),
// the nesting followed (256) and the elements kept (20,000). A page past a
// guard compiles as far as the guard allows and says so in Meta.Truncated;
// Compile fails only on a page URL that is not absolute http(s).
//
// # Diff and drift
//
// Diff matches elements and form regions by id and reports added, removed,
// changed (one change per field, with before and after) and moved
// elements, form submission changes and page changes. Each change gets a
// significance s in [0,1] and a tier:
//
//	high    price amount changed: min(0.9, 0.5 + |Δ%|/50); under 1% it is low, 0.02
//	        price or currency appeared, went or changed: 0.6 / 0.7
//	        availability flipped, add-to-cart button appeared, went or was disabled: 0.7
//	        form action or method changed: 0.8
//	        form control added or removed: 0.5, or 0.7 for password, file, email, payment
//	        control type or required changed: 0.5 (0.7 to or from password)
//	        title or h1 changed: 0.5; canonical or URL moved host: 0.8
//	medium  text edited: 0.3 × word edit distance (ignored under 0.05)
//	        text block added or removed: 0.2 × min(1, chars/500)
//	        h2–h6 added, removed or changed: 0.25
//	        link or button added or removed: 0.15; a link to a new domain: 0.4
//	        select options changed: 0.3; value or state changed: 0.1
//	low     anything else in banner, navigation or footer: 0.02
//	        text equal once digits are masked (dates, counters): 0.01
//	        image alt, move between regions: 0.01
//	none    hidden inputs, tracking parameters, advertising and cookie regions
//
// Medium scores are weighted by where the element sits: 1 in main, body
// and forms, 0.5 in dialogs, 0.3 in complementary regions. The drift is a
// noisy-OR in which noise is capped:
//
//	L     = min(0.10, Σ s over low changes)
//	drift = 1 − (1 − L) · Π (1 − s) over high and medium changes
//
// so it is 0 exactly when nothing scored, never above 0.10 from noise
// however much of it there is, does not shrink on large pages (one price
// change scores at least 0.5), and does not depend on order.
package som
