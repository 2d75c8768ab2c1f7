-- People: users, their organization memberships, sessions, one-time tokens
-- (address verification, password reset) and invitations. Secrets are
-- stored only as hashes: passwords as argon2id strings, tokens and session
-- ids as sha256.

CREATE TABLE users (
    id             TEXT PRIMARY KEY,
    email          TEXT NOT NULL UNIQUE, -- lowercased by the application
    name           TEXT NOT NULL,
    role           TEXT NOT NULL CHECK (role IN ('admin', 'member')), -- platform role
    email_verified BIGINT NOT NULL DEFAULT 0 CHECK (email_verified IN (0, 1)),
    password_hash  TEXT NOT NULL, -- argon2id, with its parameters
    created_at     BIGINT NOT NULL,
    updated_at     BIGINT NOT NULL
);

CREATE TABLE memberships (
    user_id    TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    tenant_id  TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    role       TEXT NOT NULL CHECK (role IN ('owner', 'admin', 'member')),
    created_at BIGINT NOT NULL,
    PRIMARY KEY (user_id, tenant_id)
);
CREATE INDEX memberships_by_tenant ON memberships (tenant_id, created_at);

CREATE TABLE sessions (
    id_hash          BYTEA PRIMARY KEY, -- sha256 of the cookie value
    user_id          TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    active_tenant_id TEXT NOT NULL,
    created_at       BIGINT NOT NULL,
    last_seen_at     BIGINT NOT NULL
);
CREATE INDEX sessions_by_user ON sessions (user_id);

CREATE TABLE user_tokens (
    token_hash BYTEA PRIMARY KEY, -- sha256 of the raw token, which only the email carries
    kind       TEXT NOT NULL CHECK (kind IN ('verify', 'reset')),
    user_id    TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    used_at    BIGINT
);
CREATE INDEX user_tokens_by_user ON user_tokens (user_id, kind);

CREATE TABLE org_invites (
    id          TEXT PRIMARY KEY,
    tenant_id   TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    email       TEXT NOT NULL,
    role        TEXT NOT NULL CHECK (role IN ('admin', 'member')),
    token_hash  BYTEA NOT NULL UNIQUE,
    inviter     TEXT NOT NULL, -- the actor who invited: user:<id>, key:<id>, bootstrap, open
    status      TEXT NOT NULL CHECK (status IN ('pending', 'accepted', 'revoked', 'expired')),
    created_at  BIGINT NOT NULL,
    expires_at  BIGINT NOT NULL,
    decided_at  BIGINT,          -- accepted, revoked or expired
    accepted_by TEXT              -- the user who accepted
);
CREATE INDEX org_invites_by_tenant ON org_invites (tenant_id, created_at);
CREATE INDEX org_invites_pending ON org_invites (status, expires_at);
