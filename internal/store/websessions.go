package store

import (
	"context"
	"database/sql"
	"errors"
	"hash/fnv"
	"time"

	"github.com/svc-gateway/svc/internal/browse"
	"github.com/svc-gateway/svc/internal/errs"
)

var _ browse.SessionStore = (*Store)(nil)

// ReserveWebSession adds rec, not yet opened, when admit accepts the
// sessions the tenant and every tenant hold (opened or being opened). The
// count and the insert are one transaction, so that parallel opens on any
// replica cannot pass the caps together.
func (s *Store) ReserveWebSession(ctx context.Context, rec browse.SessionRecord, admit func(tenant, all int) error) error {
	return s.tx(ctx, func(tx *txn) error {
		var tenant, all int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(SUM(CASE WHEN tenant_id = ? THEN 1 ELSE 0 END), 0)
			FROM web_sessions`, rec.TenantID).Scan(&all, &tenant); err != nil {
			return err
		}
		if err := admit(tenant, all); err != nil {
			return err
		}
		at := rec.Info.CreatedAt.UnixMilli()
		_, err := tx.ExecContext(ctx, `INSERT INTO web_sessions (id, tenant_id, created_at, last_active_at) VALUES (?, ?, ?, ?)`,
			rec.ID, rec.TenantID, at, at)
		return formatError(err)
	})
}

// SaveWebSession stores rec's state, and page when not nil, as version
// rec.Version+1, provided the stored version is still rec.Version. The
// first save opens the session, with rec's times. Not found: the session
// was closed meanwhile.
func (s *Store) SaveWebSession(ctx context.Context, rec browse.SessionRecord, page []byte) error {
	var res sql.Result
	var err error
	created, active := rec.Info.CreatedAt.UnixMilli(), rec.Info.LastActiveAt.UnixMilli()
	if page == nil {
		res, err = s.write.ExecContext(ctx, `UPDATE web_sessions SET url = ?, title = ?, state = ?, version = version + 1
			WHERE tenant_id = ? AND id = ? AND version = ? AND opened = 1`,
			rec.Info.URL, rec.Info.Title, rec.State, rec.TenantID, rec.ID, rec.Version)
	} else {
		res, err = s.write.ExecContext(ctx, `UPDATE web_sessions SET opened = 1, url = ?, title = ?, state = ?, page = ?,
			version = version + 1, page_version = version + 1,
			created_at = CASE WHEN version = 0 THEN ? ELSE created_at END,
			last_active_at = CASE WHEN version = 0 THEN ? ELSE last_active_at END
			WHERE tenant_id = ? AND id = ? AND version = ?`,
			rec.Info.URL, rec.Info.Title, rec.State, page, created, active, rec.TenantID, rec.ID, rec.Version)
	}
	if err != nil {
		return formatError(err)
	}
	return expectOne(res, "web session not found")
}

// TouchWebSession marks the tenant's open session used at now and returns
// it without its page. One last used at or before idleBefore is deleted
// instead, and browse.ErrSessionIdle returned; another tenant's session is
// not found.
func (s *Store) TouchWebSession(ctx context.Context, tenantID, id string, now, idleBefore time.Time) (browse.SessionRecord, error) {
	var rec browse.SessionRecord
	idle := false
	err := s.tx(ctx, func(tx *txn) error {
		var err error
		idle = false
		rec, err = scanWebSession(tx.QueryRowContext(ctx, `SELECT `+webSessionColumns+` FROM web_sessions
			WHERE tenant_id = ? AND id = ? AND opened = 1`, tenantID, id))
		if err != nil {
			return err
		}
		if !rec.Info.LastActiveAt.After(idleBefore) {
			idle = true
			_, err := tx.ExecContext(ctx, `DELETE FROM web_sessions WHERE tenant_id = ? AND id = ?`, tenantID, id)
			return err
		}
		at := now.UnixMilli()
		if at > rec.Info.LastActiveAt.UnixMilli() {
			rec.Info.LastActiveAt = msTime(at)
			_, err = tx.ExecContext(ctx, `UPDATE web_sessions SET last_active_at = ? WHERE tenant_id = ? AND id = ? AND last_active_at < ?`,
				at, tenantID, id, at)
		}
		return err
	})
	if err == nil && idle {
		err = browse.ErrSessionIdle
	}
	return rec, err
}

// LoadWebSession returns the tenant's open session with its state, and its
// page unless the stored page is still version pageVersion (nil then).
func (s *Store) LoadWebSession(ctx context.Context, tenantID, id string, pageVersion int64) (browse.SessionRecord, []byte, error) {
	var state, page []byte
	rec, err := scanWebSession(s.read.QueryRowContext(ctx, `SELECT `+webSessionColumns+`, state,
		CASE WHEN page_version = ? THEN NULL ELSE page END FROM web_sessions
		WHERE tenant_id = ? AND id = ? AND opened = 1`, pageVersion, tenantID, id), &state, &page)
	rec.State = state
	return rec, page, err
}

// DeleteWebSession deletes one of the tenant's sessions, opened or not,
// and reports whether it was there.
func (s *Store) DeleteWebSession(ctx context.Context, tenantID, id string) (bool, error) {
	res, err := s.write.ExecContext(ctx, `DELETE FROM web_sessions WHERE tenant_id = ? AND id = ?`, tenantID, id)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// ListWebSessions returns the tenant's open sessions, oldest first,
// without their state.
func (s *Store) ListWebSessions(ctx context.Context, tenantID string) ([]browse.SessionRecord, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT `+webSessionColumns+` FROM web_sessions
		WHERE tenant_id = ? AND opened = 1 ORDER BY created_at, id`, tenantID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	list := []browse.SessionRecord{}
	for rows.Next() {
		rec, err := scanWebSession(rows)
		if err != nil {
			return nil, err
		}
		list = append(list, rec)
	}
	return list, rows.Err()
}

// DeleteIdleWebSessions deletes every session, opened or being opened,
// last used at or before before, and returns how many. Each row goes once,
// whichever replica's sweep deletes it.
func (s *Store) DeleteIdleWebSessions(ctx context.Context, before time.Time) (int, error) {
	res, err := s.write.ExecContext(ctx, `DELETE FROM web_sessions WHERE last_active_at <= ?`, before.UnixMilli())
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// webSessionLockClass is the first key of the advisory locks of web
// sessions, so that they share no key with other advisory locks.
const webSessionLockClass = 0x77656273 // "webs"

// LockWebSession waits until no other replica acts in the session and
// keeps it so until unlock: on PostgreSQL a session advisory lock on a
// connection of its own, which ends with that connection should the
// replica die. SQLite has one process, whose own lock (browse's) suffices.
func (s *Store) LockWebSession(ctx context.Context, tenantID, id string) (unlock func(), err error) {
	if s.engine != Postgres {
		return func() {}, nil
	}
	h := fnv.New32a()
	h.Write([]byte(tenantID + "/" + id))
	key := int32(h.Sum32()) //nolint:gosec // a hash: any 32 bits will do
	conn, err := s.lockDB.Conn(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1, $2)`, int32(webSessionLockClass), key); err != nil {
		discard(conn) // the lock may have been granted as the wait was cut short
		return nil, errs.Wrap(err, errs.Unavailable, "session_busy", "the web session is busy with another action; try again")
	}
	return func() { releaseLock(conn, `SELECT pg_advisory_unlock($1, $2)`, int32(webSessionLockClass), key) }, nil
}

const webSessionColumns = `id, tenant_id, url, title, created_at, last_active_at, version, page_version`

func scanWebSession(row interface{ Scan(...any) error }, extra ...any) (browse.SessionRecord, error) {
	var rec browse.SessionRecord
	var created, active int64
	err := row.Scan(append([]any{&rec.ID, &rec.TenantID, &rec.Info.URL, &rec.Info.Title, &created, &active, &rec.Version, &rec.PageVersion},
		extra...)...)
	if errors.Is(err, sql.ErrNoRows) {
		return rec, errs.NotFoundf("web session not found")
	}
	rec.Info.ID, rec.Info.CreatedAt, rec.Info.LastActiveAt = rec.ID, msTime(created), msTime(active)
	return rec, err
}
