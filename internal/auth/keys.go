package auth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/svc-gateway/svc/internal/changes"
	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/ids"
)

// TokenPrefix starts every API key token, so that secret scanners can find a
// leaked one.
const TokenPrefix = "svc_"

// displayPrefixLen is how much of a token the key list shows.
const displayPrefixLen = 12

// Key is a tenant API key. The token itself is never stored: only its
// sha256, and the first characters for people to recognise it.
type Key struct {
	ID        string
	TenantID  string
	Name      string
	Mode      Mode
	AppID     string // when set, the key is pinned to this app
	Admin     bool
	Prefix    string
	Hash      [32]byte
	CreatedAt time.Time
	RevokedAt *time.Time
}

// KeyStore persists keys. Every method but KeyByHash is scoped to a tenant.
type KeyStore interface {
	// CreateKey stores k.
	CreateKey(ctx context.Context, k *Key) error
	// ListKeys returns the tenant's keys, newest first.
	ListKeys(ctx context.Context, tenantID string) ([]Key, error)
	// RevokeKey marks the key revoked at at and returns it. Returns
	// errs.NotFound for an unknown key or another tenant's, errs.Conflict
	// when it is already revoked.
	RevokeKey(ctx context.Context, tenantID, id string, at time.Time) (Key, error)
	// KeyByHash finds a key by its token hash. Returns errs.NotFound.
	KeyByHash(ctx context.Context, hash [32]byte) (Key, error)
}

// NewKey is what a caller may choose about a key.
type NewKey struct {
	Name  string
	Mode  Mode
	AppID string
	Admin bool
}

// Validate reports the first bad field of k.
func (k NewKey) Validate() error {
	switch {
	case strings.TrimSpace(k.Name) == "":
		return errs.Invalidf("name", "name is required")
	case len(k.Name) > 200 || !utf8.ValidString(k.Name):
		return errs.Invalidf("name", "name must be valid text of at most 200 bytes")
	case !k.Mode.Valid():
		return errs.Invalidf("mode", "mode must be \"observe\" or \"optimize\"")
	case len(k.AppID) > 200 || !validHeaderValue(k.AppID):
		return errs.Invalidf("appId", "appId must be printable text of at most 200 bytes")
	}
	return nil
}

// Keys manages API keys and resolves tokens to keys through a cache, so that
// authenticating a request costs a hash and a map lookup, not a query.
type Keys struct {
	store KeyStore
	now   func() time.Time

	mu    sync.RWMutex
	cache map[[32]byte]cachedKey
	// gen counts revocations. A lookup caches what it read only if no
	// revocation happened meanwhile, so a revoked key can never be put back.
	gen uint64

	// With several replicas (Replicate): revocations elsewhere arrive on
	// feed, and no entry is trusted longer than refresh; zero is forever.
	feed    changes.Feed
	refresh time.Duration
}

// cachedKey is a key resolved from the store, and when (only kept with a
// refresh bound).
type cachedKey struct {
	key    *Key
	loaded time.Time
}

// keysTopic carries revocations: the hex sha256 of the revoked token.
const keysTopic = "keys"

// maxCachedKeys bounds the cache; past it, an arbitrary entry is dropped.
const maxCachedKeys = 10_000

// NewKeys returns a key manager over store.
func NewKeys(store KeyStore, now func() time.Time) *Keys {
	if now == nil {
		now = time.Now
	}
	return &Keys{store: store, now: now, cache: make(map[[32]byte]cachedKey)}
}

// Replicate makes the cache follow the other replicas of the database:
// Revoke announces the key on feed, a key revoked elsewhere is dropped when
// its notification arrives, and a cached key is read again once it is older
// than refresh, the bound on a lost notification. Call it before use.
func (ks *Keys) Replicate(feed changes.Feed, refresh time.Duration) {
	ks.feed, ks.refresh = feed, refresh
	feed.Subscribe(keysTopic, ks.dropHash)
}

// dropHash drops the cached key whose token hash is hexHash, or every key
// for changes.Everything.
func (ks *Keys) dropHash(hexHash string) {
	if hexHash == changes.Everything {
		ks.mu.Lock()
		ks.gen++
		clear(ks.cache)
		ks.mu.Unlock()
		return
	}
	var h [32]byte
	if n, err := hex.Decode(h[:], []byte(hexHash)); err == nil && n == len(h) {
		ks.drop(h)
	}
}

// drop forgets the cached key of token hash h; a lookup in flight does not
// put it back.
func (ks *Keys) drop(h [32]byte) {
	ks.mu.Lock()
	ks.gen++
	delete(ks.cache, h)
	ks.mu.Unlock()
}

// Create makes a key in tenantID and returns it with its token, which is
// shown this once and never again.
func (ks *Keys) Create(ctx context.Context, tenantID string, nk NewKey) (Key, string, error) {
	nk.Name = strings.TrimSpace(nk.Name)
	if err := nk.Validate(); err != nil {
		return Key{}, "", err
	}
	token := TokenPrefix + ids.Secret()
	k := Key{
		ID:        ids.New("key"),
		TenantID:  tenantID,
		Name:      nk.Name,
		Mode:      nk.Mode,
		AppID:     nk.AppID,
		Admin:     nk.Admin,
		Prefix:    token[:displayPrefixLen],
		Hash:      sha256.Sum256([]byte(token)),
		CreatedAt: ks.now().UTC().Truncate(time.Millisecond),
	}
	if err := ks.store.CreateKey(ctx, &k); err != nil {
		return Key{}, "", err
	}
	return k, token, nil
}

// List returns the tenant's keys, newest first.
func (ks *Keys) List(ctx context.Context, tenantID string) ([]Key, error) {
	return ks.store.ListKeys(ctx, tenantID)
}

// Revoke revokes the tenant's key id; the very next request with it is
// refused. Returns errs.NotFound or errs.Conflict.
func (ks *Keys) Revoke(ctx context.Context, tenantID, id string) (Key, error) {
	if !ids.Valid("key", id) {
		return Key{}, errs.NotFoundf("key not found")
	}
	k, err := ks.store.RevokeKey(ctx, tenantID, id, ks.now())
	if err != nil {
		return Key{}, err
	}
	ks.drop(k.Hash)
	if ks.feed != nil {
		changes.Announce(ctx, ks.feed, keysTopic, hex.EncodeToString(k.Hash[:]))
	}
	return k, nil
}

// Lookup returns the active key whose token is token. Returns
// errs.Unauthorized for an unknown or revoked token.
func (ks *Keys) Lookup(ctx context.Context, token string) (*Key, error) {
	h := sha256.Sum256([]byte(token))
	ks.mu.RLock()
	c, ok := ks.cache[h]
	gen := ks.gen
	ks.mu.RUnlock()
	var now time.Time
	stale := false
	if ks.refresh > 0 {
		now = ks.now()
		stale = ok && now.Sub(c.loaded) >= ks.refresh
		ok = ok && !stale
	}
	if ok {
		return c.key, nil
	}
	found, err := ks.store.KeyByHash(ctx, h)
	if err != nil && !errs.Is(err, errs.NotFound) {
		return nil, err
	}
	if err != nil || found.RevokedAt != nil {
		if stale { // revoked elsewhere, its notice lost
			ks.drop(h)
		}
		return nil, errInvalidToken
	}
	ks.mu.Lock()
	if ks.gen == gen {
		if len(ks.cache) >= maxCachedKeys {
			for h := range ks.cache {
				delete(ks.cache, h)
				break
			}
		}
		ks.cache[h] = cachedKey{key: &found, loaded: now}
	}
	ks.mu.Unlock()
	return &found, nil
}

var errInvalidToken = errs.E(errs.Unauthorized, "invalid_token", "the bearer token is not valid")

// ForgetTenant drops the cached keys of a deleted tenant, so that their
// very next request is looked up again, and refused.
func (ks *Keys) ForgetTenant(tenantID string) {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	ks.gen++
	for h, c := range ks.cache {
		if c.key.TenantID == tenantID {
			delete(ks.cache, h)
		}
	}
}
