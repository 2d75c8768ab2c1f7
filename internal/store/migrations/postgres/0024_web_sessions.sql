-- Web sessions: an agent's browsing state, kept in the database so that
-- every svc on it serves each session (several replicas on one database).

CREATE TABLE web_sessions (
    id             TEXT PRIMARY KEY,
    tenant_id      TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    opened         BIGINT NOT NULL DEFAULT 0 CHECK (opened IN (0, 1)), -- 0 while its first page is fetched: counted against the caps, never listed
    url            TEXT NOT NULL DEFAULT '',
    title          TEXT NOT NULL DEFAULT '',
    created_at     BIGINT NOT NULL,
    last_active_at BIGINT NOT NULL,
    version        BIGINT NOT NULL DEFAULT 0, -- bumped by every save
    page_version   BIGINT NOT NULL DEFAULT 0, -- the version whose save changed the page
    page           BYTEA,                      -- the current page and what it was compiled against (JSON)
    state          BYTEA                       -- form values, cookies, which fetcher (JSON)
);
CREATE INDEX web_sessions_by_tenant ON web_sessions (tenant_id, created_at);
CREATE INDEX web_sessions_by_activity ON web_sessions (last_active_at);
