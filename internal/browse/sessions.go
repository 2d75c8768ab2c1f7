package browse

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	neturl "net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/html"

	"github.com/svc-gateway/svc/internal/audit"
	"github.com/svc-gateway/svc/internal/auth"
	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/fetch"
	"github.com/svc-gateway/svc/internal/formsubmit"
	"github.com/svc-gateway/svc/internal/governance"
	"github.com/svc-gateway/svc/internal/ids"
	"github.com/svc-gateway/svc/internal/policy"
	"github.com/svc-gateway/svc/pkg/som"
)

// Session limits: idle sessions close after IdleTimeout; a tenant keeps at
// most MaxSessionsPerTenant open.
const (
	IdleTimeout          = 5 * time.Minute
	MaxSessionsPerTenant = 32
	MaxSessions          = 1024 // all tenants together
)

// The actions of a session and their governance levels: typing and
// choosing change only the session's form state; a click reads another
// page; a submit writes to the site.
const (
	ActClick  = "click"
	ActType   = "type"
	ActSelect = "select"
	ActSubmit = "submit"
	ActOpen   = "open" // opening a session: judged as a read
)

// Levels of the actions.
const (
	LevelLocal = 0 // type, select, toggling a checkbox
	LevelRead  = 1 // following a link
	LevelWrite = 3 // submitting a form
)

// ObserveWriteMessage is the refusal of a submit from an observe-mode key.
const ObserveWriteMessage = "observe-mode keys cannot perform web writes"

// SessionInfo describes an open session.
type SessionInfo struct {
	ID           string    `json:"id"`
	URL          string    `json:"url"`
	Title        string    `json:"title,omitempty"`
	CreatedAt    time.Time `json:"createdAt"`
	LastActiveAt time.Time `json:"lastActiveAt"`
}

// session is one agent's browsing state as this process last loaded it
// from the store: cookies, the current page and what was typed into its
// forms.
type session struct {
	tenantID string
	id       string

	// mu is held for a whole action, network included: one action at a
	// time per session in this process (the store's lock keeps the other
	// processes out). It guards the fields below it.
	mu          sync.Mutex
	loaded      bool
	version     int64 // the stored version this state is
	pageVersion int64 // the stored version of the page doc was compiled from
	open        bool  // opened in open dev mode: the fetcher of its address rules
	url         string
	title       string
	jar         *sessionJar
	doc         *som.Document
	state       formsubmit.State
	page        []byte    // the page to store with the next save; nil when stored
	dirty       bool      // form state changed since the last save
	used        time.Time // last used through this process
}

// Sessions keeps the open web sessions of every tenant in the store, with
// the state of those used through this process at hand in memory.
type Sessions struct {
	svc      *Service
	store    SessionStore
	governor *governance.Governor
	audit    *audit.Log
	now      func() time.Time

	mu   sync.Mutex
	byID map[string]*session // by tenant and id
	stop chan struct{}
	done chan struct{}
}

// NewSessions returns the session keeper and starts its idle sweep; Close
// stops it.
func NewSessions(svc *Service, store SessionStore, governor *governance.Governor, auditLog *audit.Log) *Sessions {
	s := &Sessions{svc: svc, store: store, governor: governor, audit: auditLog, now: svc.o.Now,
		byID: map[string]*session{}, stop: make(chan struct{}), done: make(chan struct{})}
	go s.sweep()
	return s
}

// Close stops the idle sweep and forgets the sessions held in memory; the
// store keeps them for the other processes.
func (s *Sessions) Close() {
	close(s.stop)
	<-s.done
	s.mu.Lock()
	clear(s.byID)
	s.mu.Unlock()
}

func (s *Sessions) sweep() {
	defer close(s.done)
	t := time.NewTicker(30 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.CloseIdle()
		}
	}
}

// CloseIdle closes the sessions idle for IdleTimeout and returns how many.
// Every process sweeps; each session is deleted once, by whichever comes
// first.
func (s *Sessions) CloseIdle() int {
	before := s.now().Add(-IdleTimeout)
	n, err := s.store.DeleteIdleWebSessions(context.Background(), before)
	if err != nil {
		s.svc.o.Logger.Warn("closing idle web sessions failed", "error", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for key, ss := range s.byID {
		if ss.mu.TryLock() { // one in use is not idle
			if !ss.used.After(before) {
				delete(s.byID, key)
			}
			ss.mu.Unlock()
		}
	}
	return n
}

// Opened is the answer to opening a session.
type Opened struct {
	Session SessionInfo     `json:"session"`
	SOM     json.RawMessage `json:"som"`
	Context string          `json:"context"`
}

// Open starts a session at url for the caller's tenant.
func (s *Sessions) Open(ctx context.Context, id *auth.Identity, url string) (_ Opened, err error) {
	sessionID := ids.New("ws")
	reserved := s.now().UTC().Truncate(time.Millisecond)
	if err := s.reserve(ctx, id.TenantID, sessionID, reserved); err != nil {
		return Opened{}, err
	}
	defer func() {
		if err != nil { // the reservation no longer counts
			_, _ = s.store.DeleteWebSession(context.WithoutCancel(ctx), id.TenantID, sessionID)
		}
	}()
	// Opening reads a page, as a click does.
	open := policy.WebAction{Action: ActOpen, URL: url, Level: LevelRead, Fields: map[string]string{}}
	if u, err := neturl.Parse(url); err == nil {
		open.Host = u.Hostname()
	}
	if err := s.judge(ctx, id, "", ActOpen, url, &policy.Input{Web: open}, false); err != nil {
		return Opened{}, err
	}
	jar := newSessionJar(nil)
	openMode := id.Via == auth.ViaOpen
	page, err := s.svc.fetcher(openMode).Do(ctx, &fetch.Request{URL: url, Hop: s.judgeHop(id, "", ActOpen, &policy.Input{Web: open}, nil)}, jar)
	if err != nil {
		s.fetchFailed(ctx, id, "web.open", url, map[string]any{}, err)
		return Opened{}, err
	}
	rec := &pageRecord{URL: page.URL.String(), ContentType: page.ContentType, HTML: page.Body}
	snap, doc, err := rec.compile()
	if err != nil {
		return Opened{}, err
	}
	now := s.now().UTC().Truncate(time.Millisecond)
	ss := &session{tenantID: id.TenantID, id: sessionID, open: openMode, url: rec.URL, title: snap.Meta.Title,
		jar: jar, doc: doc, state: newFormState(), used: now}
	info := SessionInfo{ID: ss.id, URL: ss.url, Title: ss.title, CreatedAt: now, LastActiveAt: now}
	raw, err := json.Marshal(snap)
	if err != nil {
		return Opened{}, err
	}
	if ss.page, err = json.Marshal(rec); err != nil {
		return Opened{}, err
	}
	if err := s.save(ctx, ss, info); err != nil {
		return Opened{}, err
	}
	s.mu.Lock()
	s.byID[cacheKey(ss.tenantID, ss.id)] = ss
	s.mu.Unlock()
	s.record(ctx, id, "web.open", audit.Allow, ss.url, map[string]any{"session": ss.id})
	return Opened{Session: info, SOM: raw, Context: snap.Context}, nil
}

// reserve counts a session about to be opened for the tenant against the
// caps, before its page is fetched, so that parallel opens (through any
// process) cannot pass them together.
func (s *Sessions) reserve(ctx context.Context, tenantID, sessionID string, at time.Time) error {
	rec := SessionRecord{TenantID: tenantID, ID: sessionID, Info: SessionInfo{ID: sessionID, CreatedAt: at, LastActiveAt: at}}
	return s.store.ReserveWebSession(ctx, rec, func(n, all int) error {
		if n >= MaxSessionsPerTenant {
			return errs.E(errs.Conflict, "too_many_sessions", "%d web sessions are open; close one first", n)
		}
		if all >= MaxSessions {
			return errs.E(errs.Unavailable, "too_many_sessions", "svc holds as many web sessions as it may; try again later")
		}
		return nil
	})
}

// save stores ss as the version after the one it holds: its state, and its
// page when it changed. info gives the times of a first save.
func (s *Sessions) save(ctx context.Context, ss *session, info SessionInfo) error {
	ss.jar.clearChanged() // before it is read: a cookie set meanwhile is saved next time
	state, err := encodeState(ss)
	if err != nil {
		return err
	}
	info.URL, info.Title = ss.url, ss.title
	rec := SessionRecord{TenantID: ss.tenantID, ID: ss.id, Info: info, Version: ss.version, State: state}
	if err := s.store.SaveWebSession(ctx, rec, ss.page); err != nil {
		ss.loaded = false // read it again before the next action
		return err
	}
	ss.version++
	if ss.page != nil {
		ss.pageVersion, ss.page = ss.version, nil
	}
	ss.loaded, ss.dirty = true, false
	return nil
}

// refresh brings ss up to the stored version, which another process may
// have moved on; not found when the session was closed meanwhile.
func (s *Sessions) refresh(ctx context.Context, ss *session) error {
	pageVersion := int64(-1)
	if ss.loaded {
		pageVersion = ss.pageVersion
	}
	rec, page, err := s.store.LoadWebSession(ctx, ss.tenantID, ss.id, pageVersion)
	if err != nil {
		return err
	}
	if ss.loaded && rec.Version == ss.version {
		return nil
	}
	if page != nil {
		var p pageRecord
		if err := json.Unmarshal(page, &p); err != nil {
			return fmt.Errorf("web session %s: stored page: %w", ss.id, err)
		}
		_, doc, err := p.compile()
		if err != nil {
			return err
		}
		ss.doc, ss.url, ss.pageVersion = doc, p.URL, rec.PageVersion
	}
	if err := decodeState(ss, rec.State); err != nil {
		return fmt.Errorf("web session %s: stored state: %w", ss.id, err)
	}
	ss.version, ss.title, ss.loaded, ss.page, ss.dirty = rec.Version, rec.Info.Title, true, nil, false
	return nil
}

func cacheKey(tenantID, sessionID string) string { return tenantID + "/" + sessionID }

// get returns the tenant's open session, marked used; another tenant's is
// not found.
func (s *Sessions) get(ctx context.Context, tenantID, sessionID string) (SessionRecord, error) {
	now := s.now().UTC().Truncate(time.Millisecond)
	rec, err := s.store.TouchWebSession(ctx, tenantID, sessionID, now, now.Add(-IdleTimeout))
	if errors.Is(err, ErrSessionIdle) {
		s.forget(tenantID, sessionID)
		return rec, errs.NotFoundf("web session not found (sessions close after %s idle)", IdleTimeout)
	}
	if errs.Is(err, errs.NotFound) {
		s.forget(tenantID, sessionID)
	}
	return rec, err
}

// held returns this process's copy of a session get found, made when it
// has none.
func (s *Sessions) held(tenantID, sessionID string) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.byID[cacheKey(tenantID, sessionID)]
	if !ok {
		ss = &session{tenantID: tenantID, id: sessionID}
		s.byID[cacheKey(tenantID, sessionID)] = ss
	}
	return ss
}

func (s *Sessions) forget(tenantID, sessionID string) {
	s.mu.Lock()
	delete(s.byID, cacheKey(tenantID, sessionID))
	s.mu.Unlock()
}

// List returns the tenant's open sessions, oldest first.
func (s *Sessions) List(ctx context.Context, tenantID string) ([]SessionInfo, error) {
	s.CloseIdle()
	recs, err := s.store.ListWebSessions(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	out := make([]SessionInfo, len(recs))
	for i, r := range recs {
		out[i] = r.Info
	}
	return out, nil
}

// CloseSession closes one of the tenant's sessions.
func (s *Sessions) CloseSession(ctx context.Context, id *auth.Identity, sessionID string) error {
	rec, err := s.get(ctx, id.TenantID, sessionID)
	if err != nil {
		return err
	}
	if _, err := s.store.DeleteWebSession(ctx, id.TenantID, sessionID); err != nil {
		return err
	}
	s.forget(id.TenantID, sessionID)
	s.record(ctx, id, "web.close", audit.Allow, rec.Info.URL, map[string]any{"session": sessionID})
	return nil
}

// Action is an agent's request to act on the current page.
type Action struct {
	Action string `json:"action"`
	Target string `json:"target"`
	Value  string `json:"value,omitempty"`
}

// ActionResult reports what an action did.
type ActionResult struct {
	OK        bool   `json:"ok"`
	Action    string `json:"action"`
	Target    string `json:"target"`
	Resolved  string `json:"resolved,omitempty"`  // what the target turned out to be
	Navigated bool   `json:"navigated,omitempty"` // a new page was loaded
	URL       string `json:"url"`
	Error     string `json:"error,omitempty"`
}

// Acted is the answer to an action: its result and the page after it.
type Acted struct {
	Result  ActionResult    `json:"result"`
	SOM     json.RawMessage `json:"som"`
	Diff    *som.Delta      `json:"diff,omitempty"`
	Context string          `json:"context"`
}

// plan is an action resolved against the page: what it will do, at which
// level, to where.
type plan struct {
	kind      string // the effective action
	level     int64
	node      *html.Node
	element   som.Element
	form      *html.Node // the form a submit sends
	submitter *html.Node
	href      string
	toggle    bool // a click on a checkbox or radio
}

// Act performs one action in the caller's session. The target id must
// still name what the caller saw; the action is judged by the web policies
// (observe-mode keys never submit); a navigation goes through the address
// guard like any fetch; every action is audited.
func (s *Sessions) Act(ctx context.Context, id *auth.Identity, sessionID string, a Action) (_ Acted, err error) {
	if _, err := s.get(ctx, id.TenantID, sessionID); err != nil {
		return Acted{}, err
	}
	ss := s.held(id.TenantID, sessionID)
	ss.mu.Lock()
	defer ss.mu.Unlock()
	unlock, err := s.store.LockWebSession(ctx, id.TenantID, sessionID)
	if err != nil {
		return Acted{}, err
	}
	defer unlock()
	// Closed while this action waited for the one before, or moved on by
	// another process.
	if err := s.refresh(ctx, ss); err != nil {
		if errs.Is(err, errs.NotFound) {
			s.forget(id.TenantID, sessionID)
		}
		return Acted{}, err
	}
	ss.used = s.now()
	// Whatever the action changed is stored before the next one, through
	// any process, can start: form values, a new page, cookies (a fetch
	// that failed may have set some).
	defer func() {
		if !ss.dirty && ss.page == nil && !ss.jar.hasChanged() {
			return
		}
		serr := s.save(context.WithoutCancel(ctx), ss, SessionInfo{})
		if errs.Is(serr, errs.NotFound) { // closed meanwhile: the action stands, as it happened
			s.forget(id.TenantID, sessionID)
			serr = nil
		}
		if err == nil && serr != nil {
			err = serr
		}
	}()
	p, err := resolveAction(ss.doc, a)
	if err != nil {
		s.record(ctx, id, "web."+a.Action, audit.Deny, ss.url, map[string]any{"session": sessionID, "target": a.Target, "error": errs.As(err).Code})
		return Acted{}, err
	}
	result := ActionResult{OK: true, Action: a.Action, Target: a.Target, Resolved: describeElement(p.element), URL: ss.url}
	if p.level >= LevelWrite && id.Mode == auth.Observe {
		s.record(ctx, id, "web."+p.kind, audit.Deny, ss.url, map[string]any{"session": sessionID, "target": a.Target, "reason": "observe mode"})
		return Acted{}, errs.E(errs.Forbidden, "observe_mode", ObserveWriteMessage)
	}
	in, sub, err := s.policyInput(ss, p, a)
	if err != nil {
		return Acted{}, err
	}
	if err := s.judge(ctx, id, sessionID, p.kind, a.Target, in, false); err != nil {
		return Acted{}, err
	}
	prev := ss.doc.Snapshot()
	navigated := false
	switch {
	case p.kind == ActType || p.kind == ActSelect:
		values := []string{a.Value}
		if err := formsubmit.CheckValue(p.node, values); err != nil {
			return Acted{}, err
		}
		ss.state.Values[p.node] = values
		ss.dirty = true
	case p.toggle:
		ss.state.Checked[p.node] = !isChecked(ss.state, p.node)
		ss.dirty = true
	case p.kind == ActClick && p.href == "":
		result.OK, result.Error = false, "the link runs a script; a protocol-level session cannot follow it"
	case p.kind == ActClick:
		page, err := s.svc.fetcher(ss.open).Do(ctx, &fetch.Request{URL: p.href, Hop: s.judgeHop(id, sessionID, p.kind, in, nil)}, ss.jar)
		if err != nil {
			s.fetchFailed(ctx, id, "web.click", p.href, map[string]any{"session": sessionID}, err)
			return Acted{}, err
		}
		if err := ss.load(page); err != nil {
			return Acted{}, err
		}
		navigated = true
	case p.kind == ActSubmit:
		req := &fetch.Request{Method: sub.Method, URL: sub.URL, Body: sub.Body, ContentType: sub.ContentType,
			Hop: s.judgeHop(id, sessionID, p.kind, in, sub.secret)}
		page, err := s.svc.fetcher(ss.open).Do(ctx, req, ss.jar)
		if err != nil {
			s.fetchFailed(ctx, id, "web.submit", in.Web.URL, map[string]any{"session": sessionID}, err)
			return Acted{}, err
		}
		if err := ss.load(page); err != nil {
			return Acted{}, err
		}
		navigated = true
	}
	result.Navigated, result.URL = navigated, ss.url
	s.record(ctx, id, "web."+p.kind, audit.Allow, in.Web.URL, map[string]any{"session": sessionID, "target": a.Target,
		"navigated": navigated, "level": p.level})
	next := ss.doc.Snapshot()
	raw, err := json.Marshal(next)
	if err != nil {
		return Acted{}, err
	}
	out := Acted{Result: result, SOM: raw, Context: next.Context}
	if navigated && prev.Meta.URL == next.Meta.URL {
		d := som.Diff(prev, next)
		out.Diff = &d
	}
	return out, nil
}

// judge runs the web policies on an action and refuses it, audited, when
// they deny it or hold it for approval. A redirect's check holds nothing:
// it is refused instead (governance.Call.Unheld).
func (s *Sessions) judge(ctx context.Context, id *auth.Identity, sessionID, kind, target string, in *policy.Input, redirect bool) error {
	d, err := s.governor.Decide(ctx, governance.Call{ID: id, RunID: sessionID, Target: policy.Web, Unheld: redirect, Describe: func() (json.RawMessage, string) {
		b, _ := json.Marshal(map[string]any{"session": sessionID, "action": in.Web.Action, "url": in.Web.URL, "fields": in.Web.Fields})
		return b, governance.Fingerprint(policy.Web, id, b)
	}}, in)
	if err != nil {
		return err
	}
	if d.Enforced {
		s.record(ctx, id, "web."+kind, string(d.Verdict.Decision), in.Web.URL, map[string]any{"session": sessionID, "target": target})
		if d.Verdict.Failed() && !d.Verdict.Denied() {
			return &errs.Error{Kind: errs.Forbidden, Code: codePolicyError,
				Public: fmt.Sprintf("a policy could not be evaluated on this web %s (the verdict says why)", kind), Beside: map[string]any{"verdict": d.Verdict}}
		}
		return &errs.Error{Kind: errs.Forbidden, Code: codePolicyBlocked,
			Public: fmt.Sprintf("a policy refused this web %s", kind), Beside: map[string]any{"verdict": d.Verdict}}
	}
	return nil
}

// The codes of an action the web policies stopped: refused or held, or
// stopped because a rule could not be evaluated.
const (
	codePolicyBlocked = "policy_blocked"
	codePolicyError   = "policy_error"
)

// policyStopped reports whether err is judge's refusal.
func policyStopped(e *errs.Error) bool {
	return e != nil && (e.Code == codePolicyBlocked || e.Code == codePolicyError)
}

// judgeHop returns the check of each redirect an action's request meets,
// so that a rule about a page cannot be passed by a redirect there. The web
// policies judge what the redirect does: one that sends the request on
// (307, 308: same method and body) is the action again at the new URL; one
// that turns it into a GET is a read of the new page, as a click on a link
// (after a submit, the form was sent already). Query values of the action's
// password fields (secret) stay masked. A refusal stops the redirect, audited like
// the action's own; a hold refuses it too, since a redirect cannot be
// retried alone.
func (s *Sessions) judgeHop(id *auth.Identity, sessionID, kind string, in *policy.Input, secret map[string]bool) func(context.Context, string, *neturl.URL) error {
	return func(ctx context.Context, method string, to *neturl.URL) error {
		hop := *in
		hop.Web.URL, hop.Web.Host = maskQuery(to.String(), secret), to.Hostname()
		if method == http.MethodGet || method == http.MethodHead {
			hop.Web.Level, hop.Web.Fields = LevelRead, map[string]string{}
			if kind == ActSubmit {
				hop.Web.Action = ActClick
			}
		}
		err := s.judge(ctx, id, sessionID, kind, hop.Web.URL, &hop, true)
		if e := errs.As(err); policyStopped(e) {
			e.Public = fmt.Sprintf("a policy refused the redirect of this web %s to host %q", kind, to.Hostname())
		}
		return err
	}
}

// fetchFailed audits an action whose fetch failed, unless a redirect's
// check refused it: judge audited that refusal already, with the URL it
// was refused at.
func (s *Sessions) fetchFailed(ctx context.Context, id *auth.Identity, action, url string, details map[string]any, err error) {
	e := errs.As(err)
	if policyStopped(e) {
		return
	}
	code := ""
	if e != nil {
		code = e.Code
	}
	details["error"] = code
	s.record(ctx, id, action, audit.Deny, url, details)
}

// load makes page the session's current page; a page at the same URL is
// reconciled with the last one so that unchanged elements keep their ids.
func (ss *session) load(page *fetch.Result) error {
	rec := &pageRecord{URL: page.URL.String(), ContentType: page.ContentType, HTML: page.Body}
	if old := ss.doc.Snapshot(); old.Meta.URL == rec.URL {
		rec.Previous = old
	}
	snap, doc, err := rec.compile()
	if err != nil {
		return err
	}
	stored, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	ss.doc, ss.state, ss.url, ss.title, ss.page = doc, newFormState(), rec.URL, snap.Meta.Title, stored
	return nil
}

func isChecked(st formsubmit.State, n *html.Node) bool {
	if v, ok := st.Checked[n]; ok {
		return v
	}
	for _, a := range n.Attr {
		if a.Namespace == "" && a.Key == "checked" {
			return true
		}
	}
	return false
}

// resolveAction finds the action's target on the page and what the action
// really is: a click on a submit button submits, a click on a checkbox
// toggles it.
func resolveAction(doc *som.Document, a Action) (plan, error) {
	switch a.Action {
	case ActClick, ActType, ActSelect, ActSubmit:
	default:
		return plan{}, errs.Invalidf("action", "action must be click, type, select or submit")
	}
	if a.Target == "" {
		return plan{}, errs.Invalidf("target", "target must be an element id (e_...) or, to submit, a form id (r_form...)")
	}
	n, e, err := doc.Resolve(a.Target, doc.Snapshot())
	err = somError(err)
	if errs.Is(err, errs.NotFound) {
		return plan{}, errs.E(errs.Conflict, "unknown_target", "no element %s on the session's current page; read the page again", a.Target)
	} else if err != nil {
		return plan{}, err
	}
	p := plan{kind: a.Action, node: n, element: e}
	switch a.Action {
	case ActType:
		if e.Kind != som.KindInput && e.Kind != som.KindTextArea {
			return plan{}, errs.E(errs.Invalid, "wrong_target", "type needs a text field; %s is a %s", a.Target, kindOf(e))
		}
		p.level = LevelLocal
	case ActSelect:
		if e.Kind != som.KindSelect {
			return plan{}, errs.E(errs.Invalid, "wrong_target", "select needs a select field; %s is a %s", a.Target, kindOf(e))
		}
		p.level = LevelLocal
	case ActClick:
		switch {
		case e.Kind == som.KindLink:
			p.level, p.href = LevelRead, e.Href
			if e.JS {
				p.href = ""
			}
		case e.Kind == som.KindCheckbox || e.Kind == som.KindRadio:
			p.level, p.toggle = LevelLocal, true
		case e.Kind == som.KindButton && e.Form != "" && formsubmit.IsSubmitButton(n):
			p.kind, p.level, p.submitter = ActSubmit, LevelWrite, n
			p.form, _ = doc.Node(e.Form)
		default:
			return plan{}, errs.E(errs.Invalid, "wrong_target", "%s (a %s) does nothing a protocol-level session can do on click", a.Target, kindOf(e))
		}
	case ActSubmit:
		p.level = LevelWrite
		switch {
		case strings.HasPrefix(a.Target, "r_form"):
			p.form = n
		case e.Form != "":
			p.form, _ = doc.Node(e.Form)
			if e.Kind == som.KindButton && formsubmit.IsSubmitButton(n) {
				p.submitter = n
			}
		default:
			return plan{}, errs.E(errs.Invalid, "wrong_target", "submit needs a form (r_form...) or one of its fields; %s is in no form", a.Target)
		}
		if p.form == nil {
			return plan{}, errs.E(errs.Conflict, "stale_element", "the form of %s cannot be found; read the page again", a.Target)
		}
		if p.submitter == nil {
			p.submitter = formsubmit.DefaultButton(p.form)
		}
	}
	return p, nil
}

func kindOf(e som.Element) string {
	if e.Kind == "" {
		return "form"
	}
	return string(e.Kind)
}

func describeElement(e som.Element) string {
	name := e.Name
	if name == "" {
		name = e.Text
	}
	if r := []rune(name); len(r) > 80 {
		name = string(r[:80]) + "…"
	}
	if name == "" {
		return kindOf(e)
	}
	return fmt.Sprintf("%s %q", kindOf(e), name)
}

// formSubmit is a form's submission and the names of its password fields,
// whose values only the request itself carries unmasked.
type formSubmit struct {
	*formsubmit.Submission
	secret map[string]bool
}

// policyInput is what the web policies see of an action: for a navigation
// its destination, for a submit the fields it sends (passwords masked).
func (s *Sessions) policyInput(ss *session, p plan, a Action) (*policy.Input, *formSubmit, error) {
	w := policy.WebAction{Action: p.kind, URL: ss.url, Level: p.level, Fields: map[string]string{}}
	var sub *formSubmit
	switch {
	case p.kind == ActType || p.kind == ActSelect:
		if p.element.Field != "" {
			value := a.Value
			if p.element.Type == "password" {
				value = maskedValue
			}
			w.Fields[p.element.Field] = value
		}
	case p.kind == ActClick && p.href != "":
		w.URL = p.href
	case p.kind == ActSubmit:
		pageURL, err := neturl.Parse(ss.url)
		if err != nil {
			return nil, nil, err
		}
		built, err := formsubmit.Build(p.form, p.submitter, ss.state, pageURL)
		if err != nil {
			return nil, nil, err
		}
		sub = &formSubmit{Submission: built, secret: formsubmit.PasswordFields(p.form)}
		w.URL = maskQuery(sub.URL, sub.secret)
		for _, e := range sub.Entries {
			v := e.Value
			if sub.secret[e.Name] {
				v = maskedValue
			}
			w.Fields[e.Name] = v
		}
	}
	if u, err := neturl.Parse(w.URL); err == nil {
		w.Host = u.Hostname()
	}
	return &policy.Input{Web: w}, sub, nil
}

// maskedValue stands for a password field's value wherever policies,
// approvals and the audit trail see it.
const maskedValue = "[password]"

// maskQuery hides the values of secret fields in a GET submission's URL,
// which policies, approvals and the audit trail see.
func maskQuery(raw string, secret map[string]bool) string {
	u, err := neturl.Parse(raw)
	if err != nil || u.RawQuery == "" || len(secret) == 0 {
		return raw
	}
	q := u.Query()
	for name := range secret {
		if _, ok := q[name]; ok {
			q[name] = []string{maskedValue}
		}
	}
	u.RawQuery = q.Encode()
	return u.String()
}

func (s *Sessions) record(ctx context.Context, id *auth.Identity, action, decision, target string, details map[string]any) {
	if s.audit == nil {
		return
	}
	s.audit.Record(ctx, audit.Event{TenantID: id.TenantID, Actor: id.Actor(), Action: action, Decision: decision,
		Target: target, Details: details})
}
