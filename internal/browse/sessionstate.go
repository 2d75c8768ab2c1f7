package browse

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/cookiejar"
	neturl "net/url"
	"sync"
	"time"

	"golang.org/x/net/html"
	"golang.org/x/net/publicsuffix"

	"github.com/svc-gateway/svc/internal/formsubmit"
	"github.com/svc-gateway/svc/pkg/som"
)

// SessionStore keeps the web sessions in the database, so that every svc on
// it serves each of them: the same ids, page, form values and cookies,
// whichever replica an action reaches.
type SessionStore interface {
	// ReserveWebSession adds a session not yet opened (counted against the
	// caps, never listed) when admit accepts the sessions the tenant and
	// every tenant hold.
	ReserveWebSession(ctx context.Context, rec SessionRecord, admit func(tenant, all int) error) error
	// SaveWebSession stores the state, and page when not nil, provided the
	// stored version is still rec.Version; the first save opens it.
	SaveWebSession(ctx context.Context, rec SessionRecord, page []byte) error
	// TouchWebSession marks the tenant's session used, or deletes it and
	// returns ErrSessionIdle when it was last used at or before idleBefore.
	TouchWebSession(ctx context.Context, tenantID, id string, now, idleBefore time.Time) (SessionRecord, error)
	// LoadWebSession returns the session with its state, and its page
	// unless that is still version pageVersion.
	LoadWebSession(ctx context.Context, tenantID, id string, pageVersion int64) (SessionRecord, []byte, error)
	DeleteWebSession(ctx context.Context, tenantID, id string) (bool, error)
	ListWebSessions(ctx context.Context, tenantID string) ([]SessionRecord, error)
	// DeleteIdleWebSessions deletes the sessions of every tenant last used
	// at or before before.
	DeleteIdleWebSessions(ctx context.Context, before time.Time) (int, error)
	// LockWebSession keeps every other process from acting in the session
	// until unlock.
	LockWebSession(ctx context.Context, tenantID, id string) (unlock func(), err error)
}

// SessionRecord is a session as the store keeps it.
type SessionRecord struct {
	TenantID string
	ID       string
	Info     SessionInfo
	// Version counts the saves; PageVersion is the save that last changed
	// the page.
	Version     int64
	PageVersion int64
	// State is the session's small state, written at every action: form
	// values, cookies, which fetcher.
	State []byte
}

// ErrSessionIdle is a session found idle for IdleTimeout, and closed.
var ErrSessionIdle = errors.New("web session idle")

// pageRecord is a session's current page as stored: compiling it again
// gives the same snapshot, ids included.
type pageRecord struct {
	URL         string        `json:"url"`
	ContentType string        `json:"contentType"`
	HTML        []byte        `json:"html"`
	Previous    *som.Snapshot `json:"previous,omitempty"` // what it was reconciled with
}

func (p *pageRecord) compile() (*som.Snapshot, *som.Document, error) {
	snap, doc, err := som.Compile(som.Input{HTML: p.HTML, ContentType: p.ContentType, URL: p.URL, Previous: p.Previous})
	if err != nil {
		return nil, nil, somError(err)
	}
	return snap, doc, nil
}

// stateRecord is a session's state as stored: form values by element id.
type stateRecord struct {
	Open    bool                `json:"open,omitempty"` // opened in open dev mode: its fetcher
	Values  map[string][]string `json:"values,omitempty"`
	Checked map[string]bool     `json:"checked,omitempty"`
	Cookies []cookieRecord      `json:"cookies,omitempty"`
}

// encodeState is ss's state as stored.
func encodeState(ss *session) ([]byte, error) {
	st := stateRecord{Open: ss.open, Cookies: ss.jar.records()}
	if len(ss.state.Values)+len(ss.state.Checked) > 0 {
		idOf := map[*html.Node]string{}
		for _, e := range ss.doc.Snapshot().Elements {
			if n, ok := ss.doc.Node(e.ID); ok {
				idOf[n] = e.ID
			}
		}
		st.Values, st.Checked = map[string][]string{}, map[string]bool{}
		for n, v := range ss.state.Values {
			if id, ok := idOf[n]; ok {
				st.Values[id] = v
			}
		}
		for n, v := range ss.state.Checked {
			if id, ok := idOf[n]; ok {
				st.Checked[id] = v
			}
		}
	}
	return json.Marshal(st)
}

// decodeState reads a stored state into ss, against its current page.
func decodeState(ss *session, raw []byte) error {
	var st stateRecord
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &st); err != nil {
			return err
		}
	}
	ss.open, ss.state = st.Open, newFormState()
	for id, v := range st.Values {
		if n, ok := ss.doc.Node(id); ok {
			ss.state.Values[n] = v
		}
	}
	for id, v := range st.Checked {
		if n, ok := ss.doc.Node(id); ok {
			ss.state.Checked[n] = v
		}
	}
	ss.jar = newSessionJar(st.Cookies)
	return nil
}

// maxCookies bounds the cookies a session keeps; the oldest set go first.
const maxCookies = 1000

// sessionJar is a cookie jar that can be stored: it keeps the cookies it
// was given, the last of each, in the order they came, and a jar built by
// setting them again in that order holds what it holds.
type sessionJar struct {
	jar *cookiejar.Jar

	mu      sync.Mutex
	set     []cookieRecord
	changed bool // set since it was built or stored
}

// cookieRecord is one cookie as a site set it: the URL it came from and
// the cookie, a Max-Age made an expiry time.
type cookieRecord struct {
	URL    string       `json:"url"`
	Cookie *http.Cookie `json:"cookie"`
}

// key is what makes a later cookie replace an earlier one in the jar, or
// finer: so keeping the last of each key keeps what the jar holds.
func (c cookieRecord) key() [4]string {
	u, _ := neturl.Parse(c.URL)
	host := ""
	if u != nil {
		host = u.Host + u.Path
	}
	return [4]string{host, c.Cookie.Name, c.Cookie.Domain, c.Cookie.Path}
}

func newSessionJar(set []cookieRecord) *sessionJar {
	jar, _ := cookiejar.New(&cookiejar.Options{PublicSuffixList: publicsuffix.List})
	j := &sessionJar{jar: jar, set: set}
	for _, c := range set {
		if u, err := neturl.Parse(c.URL); err == nil {
			jar.SetCookies(u, []*http.Cookie{c.Cookie})
		}
	}
	return j
}

// SetCookies keeps the cookies and hands them to the jar.
func (j *sessionJar) SetCookies(u *neturl.URL, cookies []*http.Cookie) {
	now := time.Now()
	kept := make([]*http.Cookie, 0, len(cookies))
	j.mu.Lock()
	for _, c := range cookies {
		c := *c
		c.Raw, c.Unparsed = "", nil
		if c.MaxAge > 0 { // the jar counts it from now; a jar built later must not
			c.Expires, c.MaxAge, c.RawExpires = now.Add(time.Duration(c.MaxAge)*time.Second), 0, ""
		}
		rec := cookieRecord{URL: u.String(), Cookie: &c}
		k := rec.key()
		for i, old := range j.set {
			if old.key() == k {
				j.set = append(j.set[:i], j.set[i+1:]...)
				break
			}
		}
		j.set = append(j.set, rec)
		kept = append(kept, &c)
	}
	if over := len(j.set) - maxCookies; over > 0 {
		j.set = j.set[over:]
	}
	j.changed = true
	j.mu.Unlock()
	j.jar.SetCookies(u, kept)
}

// Cookies are the jar's for u.
func (j *sessionJar) Cookies(u *neturl.URL) []*http.Cookie { return j.jar.Cookies(u) }

// records returns the cookies to store. Expired ones stay: set again,
// they remove what they removed.
func (j *sessionJar) records() []cookieRecord {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]cookieRecord(nil), j.set...)
}

// hasChanged reports whether cookies were set since clearChanged.
func (j *sessionJar) hasChanged() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.changed
}

func (j *sessionJar) clearChanged() {
	j.mu.Lock()
	j.changed = false
	j.mu.Unlock()
}

func newFormState() formsubmit.State {
	return formsubmit.State{Values: map[*html.Node][]string{}, Checked: map[*html.Node]bool{}}
}
