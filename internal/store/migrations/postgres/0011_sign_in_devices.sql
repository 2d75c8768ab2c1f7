-- Browsers that signed in to an account: a sign-in that presents one of
-- their cookies is rate limited per device, so that guesses at the
-- account's password from elsewhere cannot lock its owner out.

CREATE TABLE sign_in_devices (
    id_hash      BYTEA PRIMARY KEY, -- sha256 of the device cookie value
    user_id      TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    last_used_at BIGINT NOT NULL
);
CREATE INDEX sign_in_devices_by_user ON sign_in_devices (user_id, last_used_at);
CREATE INDEX sign_in_devices_by_use ON sign_in_devices (last_used_at);
