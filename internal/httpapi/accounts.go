package httpapi

import (
	"net/http"

	"github.com/svc-gateway/svc/internal/accounts"
	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/ratelimit"
)

// The buckets of the account endpoints, on top of the standard limiter:
// per address, one shared by signup, invite-create and invite-accept (the
// spec's) and one for password guesses and reset requests; per person, one
// for resending the verification email.
const (
	abuseBucket  = "abuse:"
	loginBucket  = "login:"
	verifyBucket = "verify:" // per person: resending the verification email
)

// limitAddress draws one token of bucket for r's client address.
func (s *Server) limitAddress(r *http.Request, bucket string) error {
	ok, wait, err := s.abuseLimiter.Allow(r.Context(), bucket+s.clientKey(r))
	if err != nil {
		return err
	}
	if !ok {
		s.abuseLimited.Inc()
		return ratelimit.Exceeded("too many attempts from your address", wait)
	}
	return nil
}

// signInBucket is the bucket a sign-in to the account email names draws
// from: its device's, when r comes from a browser that signed in to that
// account before, or else the account's (by its normalized email, whether
// or not such an account exists, so that its limit says nothing about who
// has one), shared by every other browser and address; "" when no account
// can match, and the login fails on its own. A device that cannot be
// looked up counts as unknown: it can only ever help a sign-in, never
// block one.
func (s *Server) signInBucket(r *http.Request, email string) string {
	key, err := accounts.NormalizeEmail(email)
	if err != nil {
		return ""
	}
	device, err := s.Devices.Bucket(r.Context(), r, key)
	if err != nil {
		s.log.Warn("looking up the sign-in device failed", "error", err)
	}
	if device == "" {
		return "account:" + key
	}
	return device
}

// limitSignIn takes one sign-in attempt from bucket before the password is
// checked, so that guesses sent in parallel from many addresses cannot
// outnumber the tokens left. login refunds it unless the attempt failed:
// only wrong guesses empty the bucket, not the owner's sign-ins.
func (s *Server) limitSignIn(r *http.Request, bucket string) error {
	if bucket == "" {
		return nil
	}
	ok, wait, err := s.accountLimiter.Allow(r.Context(), bucket)
	if err != nil {
		return err
	}
	if !ok {
		s.accountLimited.Inc()
		return ratelimit.Exceeded("too many sign-in attempts for this account", wait)
	}
	return nil
}

// sameOrigin refuses a cross-site browser request that would act with the
// session cookie (CSRF). Requests without browser fetch metadata, such as
// those of programs using API keys, pass.
func (s *Server) sameOrigin(r *http.Request) error {
	if err := s.csrf.Check(r); err != nil {
		return errs.E(errs.Forbidden, "cross_origin", "cross-origin requests may not act with a session cookie")
	}
	return nil
}

// cookieWrite is public for an endpoint that signs in, out or acts as the
// session's person without needing one: it refuses cross-site requests.
func (s *Server) cookieWrite(h handlerFunc) http.Handler {
	return s.public(func(w http.ResponseWriter, r *http.Request) error {
		if err := s.sameOrigin(r); err != nil {
			return err
		}
		return h(w, r)
	})
}

type userResponse struct {
	User accounts.User `json:"user"`
}

func (s *Server) login(w http.ResponseWriter, r *http.Request) error {
	if err := s.limitAddress(r, loginBucket); err != nil {
		return err
	}
	var body struct {
		Email    string `json:"email"`
		Password string `json:"password"`
	}
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	bucket := s.signInBucket(r, body.Email)
	if err := s.limitSignIn(r, bucket); err != nil {
		return err
	}
	u, tenantID, err := s.Accounts.Login(r.Context(), body.Email, body.Password)
	// As in identify, only a failed attempt costs a token; one that failed
	// for another reason than the credentials was no guess.
	if bucket != "" && !errs.Is(err, errs.Unauthorized) {
		s.accountLimiter.Refund(r.Context(), bucket)
	}
	if err != nil {
		return err
	}
	if err := s.Sessions.Start(r.Context(), w, r, u.ID, tenantID); err != nil {
		return err
	}
	if err := s.Devices.Remember(r.Context(), w, r, u.ID); err != nil {
		// The person is signed in; their browser stays unknown, so their
		// next sign-in shares the account's bucket.
		s.log.Warn("remembering the sign-in device failed", "error", err)
	}
	writeJSON(w, http.StatusOK, userResponse{User: u})
	return nil
}

func (s *Server) logout(w http.ResponseWriter, r *http.Request) error {
	if err := s.Sessions.End(r.Context(), w, r); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, okResponse{OK: true})
	return nil
}

type okResponse struct {
	OK bool `json:"ok"`
}

func (s *Server) me(w http.ResponseWriter, r *http.Request) error {
	id := identity(r)
	u, err := s.Accounts.Me(r.Context(), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, struct {
		User           accounts.User `json:"user"`
		ActiveTenantID string        `json:"activeTenantId"`
		Role           string        `json:"role"`
	}{u, id.TenantID, id.OrgRole})
	return nil
}

func (s *Server) requestPasswordReset(w http.ResponseWriter, r *http.Request) error {
	if err := s.limitAddress(r, loginBucket); err != nil {
		return err
	}
	var body struct {
		Email string `json:"email"`
	}
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	if err := s.Accounts.RequestPasswordReset(r.Context(), body.Email); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, okResponse{OK: true})
	return nil
}

func (s *Server) resetPassword(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		Password string `json:"password"`
	}
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	if err := s.Accounts.ResetPassword(r.Context(), r.PathValue("token"), body.Password); err != nil {
		return err
	}
	// Every session of the user has ended, this browser's too.
	if err := s.Sessions.End(r.Context(), w, r); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, okResponse{OK: true})
	return nil
}

type signedIn struct {
	User     accounts.User `json:"user"`
	TenantID string        `json:"tenantId"`
	OrgName  string        `json:"orgName"`
}

func (s *Server) signup(w http.ResponseWriter, r *http.Request) error {
	if err := s.limitAddress(r, abuseBucket); err != nil {
		return err
	}
	var body struct {
		Email    string `json:"email"`
		Name     string `json:"name"`
		Password string `json:"password"`
	}
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	u, org, err := s.Accounts.Signup(r.Context(), body.Email, body.Name, body.Password)
	if err != nil {
		return err
	}
	if err := s.Sessions.Start(r.Context(), w, r, u.ID, org.TenantID); err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, signedIn{User: u, TenantID: org.TenantID, OrgName: org.Name})
	return nil
}

func (s *Server) verifyEmail(w http.ResponseWriter, r *http.Request) error {
	u, err := s.Accounts.Verify(r.Context(), r.PathValue("token"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, struct {
		OK    bool   `json:"ok"`
		Email string `json:"email"`
	}{true, u.Email})
	return nil
}

func (s *Server) listOrgs(w http.ResponseWriter, r *http.Request) error {
	orgs, err := s.Accounts.Orgs(r.Context(), identity(r))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, struct {
		Orgs []accounts.Org `json:"orgs"`
	}{orgs})
	return nil
}

type orgResponse struct {
	ActiveTenantID string       `json:"activeTenantId"`
	Org            accounts.Org `json:"org"`
}

func (s *Server) switchOrg(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		TenantID string `json:"tenantId"`
	}
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	id := identity(r)
	org, err := s.Accounts.CheckSwitch(r.Context(), id, body.TenantID)
	if err != nil {
		return err
	}
	if err := s.Sessions.Switch(r.Context(), w, r, id.UserID, org.TenantID); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, orgResponse{ActiveTenantID: org.TenantID, Org: org})
	return nil
}

func (s *Server) createOrg(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		Name string `json:"name"`
	}
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	id := identity(r)
	org, err := s.Accounts.CreateOrg(r.Context(), id, body.Name)
	if err != nil {
		return err
	}
	if err := s.Sessions.Switch(r.Context(), w, r, id.UserID, org.TenantID); err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, orgResponse{ActiveTenantID: org.TenantID, Org: org})
	return nil
}

func (s *Server) activeOrg(w http.ResponseWriter, r *http.Request) error {
	org, err := s.Accounts.Active(r.Context(), identity(r))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, org)
	return nil
}

func (s *Server) renameOrg(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		Name string `json:"name"`
	}
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	org, err := s.Accounts.Rename(r.Context(), identity(r), body.Name)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, org)
	return nil
}

func (s *Server) createInvite(w http.ResponseWriter, r *http.Request) error {
	if err := s.limitAddress(r, abuseBucket); err != nil {
		return err
	}
	var body struct {
		Email string `json:"email"`
		Role  string `json:"role"`
	}
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	inv, acceptURL, err := s.Accounts.CreateInvite(r.Context(), identity(r), body.Email, body.Role)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, struct {
		Invite    accounts.Invite `json:"invite"`
		AcceptURL string          `json:"acceptUrl"`
	}{inv, acceptURL})
	return nil
}

func (s *Server) listInvites(w http.ResponseWriter, r *http.Request) error {
	list, err := s.Accounts.Invites(r.Context(), identity(r))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, struct {
		Invites []accounts.Invite `json:"invites"`
	}{list})
	return nil
}

func (s *Server) revokeInvite(w http.ResponseWriter, r *http.Request) error {
	inv, err := s.Accounts.RevokeInvite(r.Context(), identity(r), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, struct {
		Invite accounts.Invite `json:"invite"`
	}{inv})
	return nil
}

func (s *Server) lookupInvite(w http.ResponseWriter, r *http.Request) error {
	info, err := s.Accounts.LookupInvite(r.Context(), r.PathValue("token"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, info)
	return nil
}

func (s *Server) acceptInvite(w http.ResponseWriter, r *http.Request) error {
	if err := s.limitAddress(r, abuseBucket); err != nil {
		return err
	}
	var body struct {
		Name     string `json:"name"`
		Password string `json:"password"`
	}
	if r.ContentLength != 0 {
		if err := decodeJSON(r, &body); err != nil {
			return err
		}
	}
	caller, err := s.Sessions.FromRequest(r)
	if err != nil {
		return err
	}
	res, err := s.Accounts.AcceptInvite(r.Context(), caller, r.PathValue("token"), body.Name, body.Password)
	if err != nil {
		return err
	}
	if res.NewUser {
		err = s.Sessions.Start(r.Context(), w, r, res.User.ID, res.TenantID)
	} else {
		err = s.Sessions.Switch(r.Context(), w, r, res.User.ID, res.TenantID)
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, signedIn{User: res.User, TenantID: res.TenantID, OrgName: res.OrgName})
	return nil
}

type memberResponse struct {
	Member accounts.Member `json:"member"`
}

func (s *Server) setMemberRole(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		Role string `json:"role"`
	}
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	m, err := s.Accounts.SetRole(r.Context(), identity(r), r.PathValue("userId"), body.Role)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, memberResponse{Member: m})
	return nil
}

func (s *Server) removeMember(w http.ResponseWriter, r *http.Request) error {
	if err := s.Accounts.RemoveMember(r.Context(), identity(r), r.PathValue("userId")); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, okResponse{OK: true})
	return nil
}

// leftOrg answers leaving or deleting an org: the org the session moved
// to, or null when the person has none left and the session ended.
type leftOrg struct {
	ActiveOrg *accounts.Org `json:"activeOrg"`
}

// moveSession moves r's session to next, or ends it when next is nil.
func (s *Server) moveSession(w http.ResponseWriter, r *http.Request, next *accounts.Org) error {
	if next == nil {
		return s.Sessions.End(r.Context(), w, r)
	}
	return s.Sessions.Switch(r.Context(), w, r, identity(r).UserID, next.TenantID)
}

func (s *Server) leaveOrg(w http.ResponseWriter, r *http.Request) error {
	next, err := s.Accounts.Leave(r.Context(), identity(r))
	if err != nil {
		return err
	}
	if err := s.moveSession(w, r, next); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, leftOrg{ActiveOrg: next})
	return nil
}

func (s *Server) deleteOrg(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		Confirm string `json:"confirm"`
	}
	if r.ContentLength != 0 {
		if err := decodeJSON(r, &body); err != nil {
			return err
		}
	}
	next, err := s.Accounts.DeleteOrg(r.Context(), identity(r), body.Confirm)
	if err != nil {
		return err
	}
	if err := s.moveSession(w, r, next); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, okResponse{OK: true})
	return nil
}

func (s *Server) resendVerification(w http.ResponseWriter, r *http.Request) error {
	// A bucket of the person's own: the mail goes to one address, and an
	// impatient click must not use up the address's bucket that invitations
	// share.
	ok, wait, err := s.abuseLimiter.Allow(r.Context(), verifyBucket+identity(r).UserID)
	if err != nil {
		return err
	}
	if !ok {
		s.abuseLimited.Inc()
		return ratelimit.Exceeded("too many verification emails asked for", wait)
	}
	if err := s.Accounts.ResendVerification(r.Context(), identity(r)); err != nil {
		return err
	}
	writeJSON(w, http.StatusAccepted, struct {
		Sent bool `json:"sent"`
	}{true})
	return nil
}
