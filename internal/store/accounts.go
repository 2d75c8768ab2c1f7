package store

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/svc-gateway/svc/internal/accounts"
	"github.com/svc-gateway/svc/internal/auth"
	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/tenant"
)

var (
	_ accounts.Store    = (*Store)(nil)
	_ auth.SessionStore = (*Store)(nil)
	_ auth.DeviceStore  = (*Store)(nil)
)

const userColumns = `id, email, name, role, email_verified, password_hash, created_at`

func scanUser(row interface{ Scan(...any) error }) (accounts.User, string, error) {
	var u accounts.User
	var hash string
	var created int64
	err := row.Scan(&u.ID, &u.Email, &u.Name, &u.Role, &u.EmailVerified, &hash, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return u, "", errs.NotFoundf("user not found")
	}
	u.CreatedAt = msTime(created)
	return u, hash, err
}

// UserByEmail returns the user of a lowercased email and its password hash.
func (s *Store) UserByEmail(ctx context.Context, email string) (accounts.User, string, error) {
	return scanUser(s.read.QueryRowContext(ctx, `SELECT `+userColumns+` FROM users WHERE email = ?`, email))
}

// UserByID returns the user and its password hash.
func (s *Store) UserByID(ctx context.Context, id string) (accounts.User, string, error) {
	return scanUser(s.read.QueryRowContext(ctx, `SELECT `+userColumns+` FROM users WHERE id = ?`, id))
}

// HasUsers reports whether any user exists.
func (s *Store) HasUsers(ctx context.Context) (bool, error) {
	var exists bool // SQLite answers 0 or 1, PostgreSQL a boolean
	err := s.read.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM users)`).Scan(&exists)
	return exists, err
}

func insertUser(ctx context.Context, tx *txn, u accounts.NewUser) error {
	at := u.CreatedAt.UnixMilli()
	_, err := tx.ExecContext(ctx, `INSERT INTO users (`+userColumns+`, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		u.ID, u.Email, u.Name, u.Role, u.EmailVerified, u.PasswordHash, at, at)
	if err = formatError(err); errs.Is(err, errs.Conflict) {
		return errs.Wrap(err, errs.Conflict, "email_taken", "an account with this email already exists")
	}
	return err
}

func insertMembership(ctx context.Context, tx *txn, userID, tenantID, role string, at time.Time) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO memberships (user_id, tenant_id, role, created_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (user_id, tenant_id) DO NOTHING`, userID, tenantID, role, at.UnixMilli())
	return formatError(err)
}

// CreateUser creates u with its first membership, and its organization when
// u.OrgName is set, in one transaction.
func (s *Store) CreateUser(ctx context.Context, u accounts.NewUser) error {
	return s.tx(ctx, func(tx *txn) error {
		if u.OrgName != "" {
			if _, err := tx.ExecContext(ctx, `INSERT INTO tenants (id, name, created_at) VALUES (?, ?, ?)`,
				u.TenantID, u.OrgName, u.CreatedAt.UnixMilli()); err != nil {
				return formatError(err)
			}
		}
		return insertAndJoin(ctx, tx, u)
	})
}

// EnsureAdmin creates u, or raises the user of u.Email to platform admin,
// verified, owner of u.TenantID; an existing password is kept.
func (s *Store) EnsureAdmin(ctx context.Context, u accounts.NewUser) (bool, error) {
	created := false
	err := s.tx(ctx, func(tx *txn) error {
		created = false // not an earlier attempt's
		var id string
		var verified bool
		err := tx.QueryRowContext(ctx, `SELECT id, email_verified FROM users WHERE email = ?`, u.Email).Scan(&id, &verified)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			created = true
			if err := insertUser(ctx, tx, u); err != nil {
				return err
			}
			id = u.ID
		case err != nil:
			return err
		case !verified:
			// Anyone may have signed up with that address; its password
			// must not become the admin's.
			return errs.E(errs.Conflict, "unverified_account",
				"an account with this email exists but its address is not verified: verify it, or choose another admin email")
		default:
			if _, err := tx.ExecContext(ctx, `UPDATE users SET role = ?, updated_at = ? WHERE id = ?`,
				u.Role, u.CreatedAt.UnixMilli(), id); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO memberships (user_id, tenant_id, role, created_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (user_id, tenant_id) DO UPDATE SET role = excluded.role`,
			id, u.TenantID, u.OrgRole, u.CreatedAt.UnixMilli()); err != nil {
			return formatError(err)
		}
		return nil
	})
	return created, err
}

// SetPassword stores a new password hash.
func (s *Store) SetPassword(ctx context.Context, userID, hash string, at time.Time) error {
	return s.tx(ctx, func(tx *txn) error {
		res, err := tx.ExecContext(ctx, `UPDATE users SET password_hash = ?, updated_at = ? WHERE id = ?`, hash, at.UnixMilli(), userID)
		if err != nil {
			return err
		}
		return expectOne(res, "user not found")
	})
}

// SetEmailVerified marks the user's address verified.
func (s *Store) SetEmailVerified(ctx context.Context, userID string, at time.Time) error {
	return s.tx(ctx, func(tx *txn) error {
		res, err := tx.ExecContext(ctx, `UPDATE users SET email_verified = 1, updated_at = ? WHERE id = ?`, at.UnixMilli(), userID)
		if err != nil {
			return err
		}
		return expectOne(res, "user not found")
	})
}

// UserOrgs lists the user's organizations, oldest membership first.
func (s *Store) UserOrgs(ctx context.Context, userID string) ([]accounts.Org, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT t.id, t.name, m.role, t.created_at FROM memberships m JOIN tenants t ON t.id = m.tenant_id
		WHERE m.user_id = ? ORDER BY m.created_at, t.id`, userID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	orgs := []accounts.Org{}
	for rows.Next() {
		var o accounts.Org
		var created int64
		if err := rows.Scan(&o.TenantID, &o.Name, &o.Role, &created); err != nil {
			return nil, err
		}
		o.CreatedAt = msTime(created)
		orgs = append(orgs, o)
	}
	return orgs, rows.Err()
}

// CreateOrg creates t owned by ownerID.
func (s *Store) CreateOrg(ctx context.Context, t tenant.Tenant, ownerID string) error {
	return s.tx(ctx, func(tx *txn) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO tenants (id, name, created_at) VALUES (?, ?, ?)`,
			t.ID, t.Name, t.CreatedAt.UnixMilli()); err != nil {
			return formatError(err)
		}
		return insertMembership(ctx, tx, ownerID, t.ID, auth.RoleOwner, t.CreatedAt)
	})
}

// RenameOrg renames the tenant.
func (s *Store) RenameOrg(ctx context.Context, tenantID, name string) error {
	return s.tx(ctx, func(tx *txn) error {
		res, err := tx.ExecContext(ctx, `UPDATE tenants SET name = ? WHERE id = ?`, name, tenantID)
		if err != nil {
			return err
		}
		return expectOne(res, "organization not found")
	})
}

// Members lists the tenant's users, oldest membership first.
func (s *Store) Members(ctx context.Context, tenantID string) ([]accounts.Member, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT u.id, u.email, u.name, m.role FROM memberships m JOIN users u ON u.id = m.user_id
		WHERE m.tenant_id = ? ORDER BY m.created_at, u.id`, tenantID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	members := []accounts.Member{}
	for rows.Next() {
		var m accounts.Member
		if err := rows.Scan(&m.UserID, &m.Email, &m.Name, &m.Role); err != nil {
			return nil, err
		}
		members = append(members, m)
	}
	return members, rows.Err()
}

// CreateUserToken stores a one-time token's hash.
func (s *Store) CreateUserToken(ctx context.Context, hash [32]byte, kind, userID string, at, expires time.Time) error {
	return s.tx(ctx, func(tx *txn) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO user_tokens (token_hash, kind, user_id, created_at, expires_at) VALUES (?, ?, ?, ?, ?)`,
			hash[:], kind, userID, at.UnixMilli(), expires.UnixMilli())
		return formatError(err)
	})
}

// ConsumeUserToken marks a live token of kind used and returns its user.
func (s *Store) ConsumeUserToken(ctx context.Context, hash [32]byte, kind string, at time.Time) (string, error) {
	var userID string
	err := s.tx(ctx, func(tx *txn) error {
		err := tx.QueryRowContext(ctx, `UPDATE user_tokens SET used_at = ?
			WHERE token_hash = ? AND kind = ? AND used_at IS NULL AND expires_at > ? RETURNING user_id`,
			at.UnixMilli(), hash[:], kind, at.UnixMilli()).Scan(&userID)
		if errors.Is(err, sql.ErrNoRows) {
			return errs.NotFoundf("token not found")
		}
		return err
	})
	return userID, err
}

// DropUserTokens deletes the user's unused tokens of kind.
func (s *Store) DropUserTokens(ctx context.Context, userID, kind string) error {
	return s.tx(ctx, func(tx *txn) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM user_tokens WHERE user_id = ? AND kind = ? AND used_at IS NULL`, userID, kind)
		return err
	})
}

const inviteColumns = `id, tenant_id, email, role, status, inviter, created_at, expires_at, decided_at, accepted_by`

func scanInvite(row interface{ Scan(...any) error }, extra ...any) (accounts.Invite, error) {
	var inv accounts.Invite
	var created, expires int64
	var decided sql.NullInt64
	var by sql.NullString
	dst := append([]any{&inv.ID, &inv.TenantID, &inv.Email, &inv.Role, &inv.Status, &inv.Inviter, &created, &expires, &decided, &by}, extra...)
	if err := row.Scan(dst...); errors.Is(err, sql.ErrNoRows) {
		return inv, errs.NotFoundf("invite not found")
	} else if err != nil {
		return inv, err
	}
	inv.CreatedAt, inv.ExpiresAt, inv.DecidedAt, inv.AcceptedBy = msTime(created), msTime(expires), msTimePtr(decided), by.String
	return inv, nil
}

// CreateInvite stores inv with its token's hash.
func (s *Store) CreateInvite(ctx context.Context, inv accounts.Invite, hash [32]byte) error {
	return s.tx(ctx, func(tx *txn) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO org_invites (id, tenant_id, email, role, token_hash, inviter, status, created_at, expires_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, inv.ID, inv.TenantID, inv.Email, inv.Role, hash[:], inv.Inviter, inv.Status,
			inv.CreatedAt.UnixMilli(), inv.ExpiresAt.UnixMilli())
		return formatError(err)
	})
}

// Invites lists the tenant's invites, newest first.
func (s *Store) Invites(ctx context.Context, tenantID string) ([]accounts.Invite, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT `+inviteColumns+` FROM org_invites WHERE tenant_id = ?
		ORDER BY created_at DESC, id DESC`, tenantID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	list := []accounts.Invite{}
	for rows.Next() {
		inv, err := scanInvite(rows)
		if err != nil {
			return nil, err
		}
		list = append(list, inv)
	}
	return list, rows.Err()
}

// PendingInvite returns the tenant's pending invite of email.
func (s *Store) PendingInvite(ctx context.Context, tenantID, email string) (accounts.Invite, error) {
	return scanInvite(s.read.QueryRowContext(ctx, `SELECT `+inviteColumns+` FROM org_invites
		WHERE tenant_id = ? AND email = ? AND status = 'pending' ORDER BY created_at DESC LIMIT 1`, tenantID, email))
}

// InviteByToken returns the invite of a token hash and its org's name.
func (s *Store) InviteByToken(ctx context.Context, hash [32]byte) (accounts.Invite, string, error) {
	var orgName string
	inv, err := scanInvite(s.read.QueryRowContext(ctx, `SELECT i.id, i.tenant_id, i.email, i.role, i.status, i.inviter,
		i.created_at, i.expires_at, i.decided_at, i.accepted_by, t.name
		FROM org_invites i JOIN tenants t ON t.id = i.tenant_id WHERE i.token_hash = ?`, hash[:]), &orgName)
	return inv, orgName, err
}

// SetInviteStatus moves the tenant's pending invite to status.
func (s *Store) SetInviteStatus(ctx context.Context, tenantID, id, status string, at time.Time) (accounts.Invite, error) {
	var inv accounts.Invite
	err := s.tx(ctx, func(tx *txn) error {
		var err error
		inv, err = scanInvite(tx.QueryRowContext(ctx, `SELECT `+inviteColumns+` FROM org_invites WHERE tenant_id = ? AND id = ?`, tenantID, id))
		if err != nil {
			return err
		}
		if inv.Status != accounts.InvitePending {
			return errs.E(errs.Conflict, "invite_"+inv.Status, "the invite is %s, not pending", inv.Status)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE org_invites SET status = ?, decided_at = ? WHERE id = ?`, status, at.UnixMilli(), id); err != nil {
			return err
		}
		inv.Status = status
		t := at.UTC()
		inv.DecidedAt = &t
		return nil
	})
	return inv, err
}

// AcceptInvite marks the pending invite accepted and adds the membership,
// creating newUser first when set, in one transaction.
func (s *Store) AcceptInvite(ctx context.Context, inv accounts.Invite, userID string, newUser *accounts.NewUser, at time.Time) error {
	return s.tx(ctx, func(tx *txn) error {
		res, err := tx.ExecContext(ctx, `UPDATE org_invites SET status = 'accepted', decided_at = ?, accepted_by = ?
			WHERE id = ? AND tenant_id = ? AND status = 'pending' AND expires_at > ?`,
			at.UnixMilli(), userID, inv.ID, inv.TenantID, at.UnixMilli())
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return errs.E(errs.Conflict, "invite_not_pending", "the invitation is no longer pending")
		}
		if newUser != nil {
			return insertAndJoin(ctx, tx, *newUser)
		}
		return insertMembership(ctx, tx, userID, inv.TenantID, inv.Role, at)
	})
}

func insertAndJoin(ctx context.Context, tx *txn, u accounts.NewUser) error {
	if err := insertUser(ctx, tx, u); err != nil {
		return err
	}
	return insertMembership(ctx, tx, u.ID, u.TenantID, u.OrgRole, u.CreatedAt)
}

// ExpireInvites marks pending invites past their expiry expired.
func (s *Store) ExpireInvites(ctx context.Context, at time.Time) (int, error) {
	var n int64
	err := s.tx(ctx, func(tx *txn) error {
		res, err := tx.ExecContext(ctx, `UPDATE org_invites SET status = 'expired', decided_at = ?
			WHERE status = 'pending' AND expires_at <= ?`, at.UnixMilli(), at.UnixMilli())
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return int(n), err
}

// CreateSession stores a session by its id's hash.
func (s *Store) CreateSession(ctx context.Context, hash [32]byte, userID, tenantID string, at time.Time) error {
	return s.tx(ctx, func(tx *txn) error {
		return insertSession(ctx, tx, hash, userID, tenantID, at, at)
	})
}

func insertSession(ctx context.Context, tx *txn, hash [32]byte, userID, tenantID string, created, seen time.Time) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO sessions (id_hash, user_id, active_tenant_id, created_at, last_seen_at)
		VALUES (?, ?, ?, ?, ?)`, hash[:], userID, tenantID, created.UnixMilli(), seen.UnixMilli())
	return formatError(err)
}

// RotateSession replaces userID's session old with next, active in
// tenantID, in one transaction. next keeps old's creation time, so that
// rotating never extends the absolute lifetime; on any failure old stays as
// it was. It returns that creation time, or errs.NotFound when old is not a
// session of userID.
func (s *Store) RotateSession(ctx context.Context, old, next [32]byte, userID, tenantID string, at time.Time) (time.Time, error) {
	var created time.Time
	err := s.tx(ctx, func(tx *txn) error {
		var ms int64
		err := tx.QueryRowContext(ctx, `SELECT created_at FROM sessions WHERE id_hash = ? AND user_id = ?`,
			old[:], userID).Scan(&ms)
		if errors.Is(err, sql.ErrNoRows) {
			return errs.NotFoundf("session not found")
		} else if err != nil {
			return err
		}
		created = msTime(ms)
		if err := insertSession(ctx, tx, next, userID, tenantID, created, at); err != nil {
			return err
		}
		return deleteSession(ctx, tx, old)
	})
	return created, err
}

// DeviceOf implements auth.DeviceStore.
func (s *Store) DeviceOf(ctx context.Context, hash [32]byte, email string, since time.Time) (bool, error) {
	var one int
	err := s.read.QueryRowContext(ctx, `SELECT 1 FROM sign_in_devices d JOIN users u ON u.id = d.user_id
		WHERE d.id_hash = ? AND u.email = ? AND d.last_used_at >= ?`, hash[:], email, since.UnixMilli()).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// ReplaceDevice implements auth.DeviceStore, in one transaction.
func (s *Store) ReplaceDevice(ctx context.Context, old, next [32]byte, userID string, at time.Time, keep int) error {
	return s.tx(ctx, func(tx *txn) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM sign_in_devices WHERE id_hash = ? AND user_id = ?`, old[:], userID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO sign_in_devices (id_hash, user_id, last_used_at) VALUES (?, ?, ?)`,
			next[:], userID, at.UnixMilli()); err != nil {
			return formatError(err)
		}
		// next stays; of the others, the keep-1 most recently used.
		_, err := tx.ExecContext(ctx, `DELETE FROM sign_in_devices WHERE user_id = ? AND id_hash != ? AND id_hash NOT IN
			(SELECT id_hash FROM sign_in_devices WHERE user_id = ? AND id_hash != ? ORDER BY last_used_at DESC, id_hash LIMIT ?)`,
			userID, next[:], userID, next[:], max(keep-1, 0))
		return err
	})
}

// ExpireDevices implements auth.DeviceStore.
func (s *Store) ExpireDevices(ctx context.Context, before time.Time) (int, error) {
	res, err := s.write.ExecContext(ctx, `DELETE FROM sign_in_devices WHERE last_used_at < ?`, before.UnixMilli())
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// LookupSession returns the session with its user's platform role and
// memberships, oldest first.
func (s *Store) LookupSession(ctx context.Context, hash [32]byte) (auth.SessionRecord, error) {
	var rec auth.SessionRecord
	var created, seen int64
	var role string
	err := s.read.QueryRowContext(ctx, `SELECT s.user_id, s.active_tenant_id, s.created_at, s.last_seen_at, u.role
		FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.id_hash = ?`, hash[:]).
		Scan(&rec.UserID, &rec.ActiveTenantID, &created, &seen, &role)
	if errors.Is(err, sql.ErrNoRows) {
		return rec, errs.NotFoundf("session not found")
	} else if err != nil {
		return rec, err
	}
	rec.CreatedAt, rec.LastSeenAt, rec.PlatformAdmin = msTime(created), msTime(seen), role == accounts.PlatformAdmin
	rows, err := s.read.QueryContext(ctx, `SELECT tenant_id, role FROM memberships WHERE user_id = ? ORDER BY created_at, tenant_id`, rec.UserID)
	if err != nil {
		return rec, err
	}
	defer rows.Close()
	for rows.Next() {
		var m auth.Membership
		if err := rows.Scan(&m.TenantID, &m.Role); err != nil {
			return rec, err
		}
		rec.Memberships = append(rec.Memberships, m)
	}
	return rec, rows.Err()
}

// TouchSession records the session's use.
func (s *Store) TouchSession(ctx context.Context, hash [32]byte, at time.Time) error {
	return s.sessionWrite(ctx, `UPDATE sessions SET last_seen_at = ? WHERE id_hash = ?`, at.UnixMilli(), hash[:])
}

// DeleteSession deletes the session.
func (s *Store) DeleteSession(ctx context.Context, hash [32]byte) error {
	return s.tx(ctx, func(tx *txn) error { return deleteSession(ctx, tx, hash) })
}

func deleteSession(ctx context.Context, tx *txn, hash [32]byte) error {
	_, err := tx.ExecContext(ctx, `DELETE FROM sessions WHERE id_hash = ?`, hash[:])
	return err
}

// DeleteUserSessions deletes every session of the user.
func (s *Store) DeleteUserSessions(ctx context.Context, userID string) error {
	return s.sessionWrite(ctx, `DELETE FROM sessions WHERE user_id = ?`, userID)
}

func (s *Store) sessionWrite(ctx context.Context, query string, args ...any) error {
	return s.tx(ctx, func(tx *txn) error {
		_, err := tx.ExecContext(ctx, query, args...)
		return err
	})
}

// Member returns userID's membership of tenantID.
func (s *Store) Member(ctx context.Context, tenantID, userID string) (accounts.Member, error) {
	return scanMember(s.read.QueryRowContext(ctx, `SELECT u.id, u.email, u.name, m.role FROM memberships m
		JOIN users u ON u.id = m.user_id WHERE m.tenant_id = ? AND m.user_id = ?`, tenantID, userID))
}

func scanMember(row interface{ Scan(...any) error }) (accounts.Member, error) {
	var m accounts.Member
	err := row.Scan(&m.UserID, &m.Email, &m.Name, &m.Role)
	if errors.Is(err, sql.ErrNoRows) {
		return m, errs.NotFoundf("member not found")
	}
	return m, err
}

// keepsAnOwner returns accounts.ErrLastOwner when the tenant has no owner
// left, so that the transaction that made it so rolls back.
func keepsAnOwner(ctx context.Context, tx *txn, tenantID string) error {
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM memberships WHERE tenant_id = ? AND role = ?`,
		tenantID, auth.RoleOwner).Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		return accounts.ErrLastOwner
	}
	return nil
}

// SetMemberRole sets userID's role in tenantID, unless that leaves the
// tenant without an owner.
func (s *Store) SetMemberRole(ctx context.Context, tenantID, userID, role string) (accounts.Member, error) {
	var m accounts.Member
	err := s.tx(ctx, func(tx *txn) error {
		res, err := tx.ExecContext(ctx, `UPDATE memberships SET role = ? WHERE tenant_id = ? AND user_id = ?`, role, tenantID, userID)
		if err != nil {
			return err
		}
		if err := expectOne(res, "member not found"); err != nil {
			return err
		}
		if err := keepsAnOwner(ctx, tx, tenantID); err != nil {
			return err
		}
		m, err = scanMember(tx.QueryRowContext(ctx, `SELECT u.id, u.email, u.name, m.role FROM memberships m
			JOIN users u ON u.id = m.user_id WHERE m.tenant_id = ? AND m.user_id = ?`, tenantID, userID))
		return err
	})
	return m, err
}

// RemoveMember ends userID's membership of tenantID, unless that leaves
// the tenant without an owner.
func (s *Store) RemoveMember(ctx context.Context, tenantID, userID string) error {
	return s.tx(ctx, func(tx *txn) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM memberships WHERE tenant_id = ? AND user_id = ?`, tenantID, userID)
		if err != nil {
			return err
		}
		if err := expectOne(res, "member not found"); err != nil {
			return err
		}
		return keepsAnOwner(ctx, tx, tenantID)
	})
}
