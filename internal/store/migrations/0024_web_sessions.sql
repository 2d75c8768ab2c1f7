-- Web sessions: an agent's browsing state, kept in the database so that
-- every svc on it serves each session (several replicas on one database).

CREATE TABLE web_sessions (
    id             TEXT PRIMARY KEY,
    tenant_id      TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    opened         INTEGER NOT NULL DEFAULT 0 CHECK (opened IN (0, 1)), -- 0 while its first page is fetched: counted against the caps, never listed
    url            TEXT NOT NULL DEFAULT '',
    title          TEXT NOT NULL DEFAULT '',
    created_at     INTEGER NOT NULL,
    last_active_at INTEGER NOT NULL,
    version        INTEGER NOT NULL DEFAULT 0, -- bumped by every save
    page_version   INTEGER NOT NULL DEFAULT 0, -- the version whose save changed the page
    page           BLOB,                       -- the current page and what it was compiled against (JSON)
    state          BLOB                        -- form values, cookies, which fetcher (JSON)
);
CREATE INDEX web_sessions_by_tenant ON web_sessions (tenant_id, created_at);
CREATE INDEX web_sessions_by_activity ON web_sessions (last_active_at);
