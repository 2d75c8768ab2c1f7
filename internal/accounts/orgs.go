package accounts

import (
	"context"
	"time"

	"github.com/svc-gateway/svc/internal/auth"
	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/ids"
	"github.com/svc-gateway/svc/internal/tenant"
)

// ActiveOrg is the organization a request acts in, with its members.
type ActiveOrg struct {
	TenantID  string    `json:"tenantId"`
	Name      string    `json:"name"`
	Role      string    `json:"role"`
	CreatedAt time.Time `json:"createdAt"`
	Members   []Member  `json:"members"`
}

// needSession returns the signed-in user of id, or errs.Unauthorized: the
// organizations of a person need a person.
func needSession(id *auth.Identity) error {
	if id == nil || id.Via != auth.ViaSession {
		return errs.E(errs.Unauthorized, "session_required", "this needs a signed-in user, not a key")
	}
	return nil
}

// Orgs lists the signed-in user's organizations, the resolved one active.
func (s *Service) Orgs(ctx context.Context, id *auth.Identity) ([]Org, error) {
	if err := needSession(id); err != nil {
		return nil, err
	}
	orgs, err := s.Store.UserOrgs(ctx, id.UserID)
	if err != nil {
		return nil, err
	}
	for i := range orgs {
		orgs[i].Active = orgs[i].TenantID == id.TenantID
	}
	return orgs, nil
}

// CheckSwitch returns the org the user may switch to, or errs.Forbidden when
// they are not a member of it (the same answer for an org that does not
// exist). The caller moves the session.
func (s *Service) CheckSwitch(ctx context.Context, id *auth.Identity, tenantID string) (Org, error) {
	orgs, err := s.Orgs(ctx, id)
	if err != nil {
		return Org{}, err
	}
	for _, o := range orgs {
		if o.TenantID == tenantID {
			o.Active = true
			s.record(ctx, tenantID, id.Actor(), "org.switched", "org:"+tenantID, map[string]any{"from": id.TenantID})
			return o, nil
		}
	}
	return Org{}, errs.E(errs.Forbidden, "not_a_member", "you are not a member of that organization")
}

// CreateOrg creates an organization owned by the signed-in user. The caller
// makes it the session's active org.
func (s *Service) CreateOrg(ctx context.Context, id *auth.Identity, name string) (Org, error) {
	if err := needSession(id); err != nil {
		return Org{}, err
	}
	n, err := cleanName("name", name)
	if err != nil {
		return Org{}, err
	}
	t := tenant.Tenant{ID: ids.New("t"), Name: n, CreatedAt: s.now()}
	if err := s.Store.CreateOrg(ctx, t, id.UserID); err != nil {
		return Org{}, err
	}
	s.Sessions.Invalidate()
	s.record(ctx, t.ID, id.Actor(), "org.created", "org:"+t.ID, map[string]any{"name": n})
	return Org{TenantID: t.ID, Name: n, Role: auth.RoleOwner, Active: true, CreatedAt: stored(t.CreatedAt)}, nil
}

// Active returns the signed-in user's organization, its members and their
// role in it.
func (s *Service) Active(ctx context.Context, id *auth.Identity) (ActiveOrg, error) {
	if err := needSession(id); err != nil {
		return ActiveOrg{}, err // its members' addresses are for people of the org
	}
	t, err := s.Store.Tenant(ctx, id.TenantID)
	if err != nil {
		return ActiveOrg{}, err
	}
	members, err := s.Store.Members(ctx, id.TenantID)
	if err != nil {
		return ActiveOrg{}, err
	}
	return ActiveOrg{TenantID: t.ID, Name: t.Name, Role: roleOf(id), CreatedAt: t.CreatedAt, Members: members}, nil
}

// Rename renames the caller's organization; the caller must be its owner or
// admin.
func (s *Service) Rename(ctx context.Context, id *auth.Identity, name string) (ActiveOrg, error) {
	if err := needSession(id); err != nil {
		return ActiveOrg{}, err
	}
	if err := auth.RequireAdmin(id); err != nil {
		return ActiveOrg{}, err
	}
	n, err := cleanName("name", name)
	if err != nil {
		return ActiveOrg{}, err
	}
	old, err := s.Store.Tenant(ctx, id.TenantID)
	if err != nil {
		return ActiveOrg{}, err
	}
	if err := s.Store.RenameOrg(ctx, id.TenantID, n); err != nil {
		return ActiveOrg{}, err
	}
	s.record(ctx, id.TenantID, id.Actor(), "org.renamed", "org:"+id.TenantID, map[string]any{"from": old.Name, "to": n})
	return s.Active(ctx, id)
}

// stored is t as the store keeps it (milliseconds, UTC), so that the answer
// that creates a record and every later read of it agree.
func stored(t time.Time) time.Time { return time.UnixMilli(t.UnixMilli()).UTC() }

func roleOf(id *auth.Identity) string {
	switch {
	case id.OrgRole != "":
		return id.OrgRole
	case id.Admin:
		return auth.RoleAdmin
	default:
		return auth.RoleMember
	}
}
