package ledger_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/ledger"
)

// The key file is made at the first start, readable by its owner only, and
// read back the same at the next.
func TestLedgerKeyIsCreatedOnceWithMode0600(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys", "ledger.key")
	k, created, err := ledger.LoadOrCreateKey(path)
	require.NoError(t, err)
	assert.True(t, created)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	again, created, err := ledger.LoadOrCreateKey(path)
	require.NoError(t, err)
	assert.False(t, created)
	assert.Equal(t, k.Public, again.Public)
	assert.Equal(t, ledger.KeyID(k.Public), again.ID)
	assert.Len(t, k.ID, 16)
}

// Processes starting at once on a new folder end up with one key, the one
// that was made first, and no half-written file or temporary one is left:
// each start either reads a whole key or makes one.
func TestLedgerKeyMadeByConcurrentStartsIsOne(t *testing.T) {
	for range 20 {
		dir := t.TempDir()
		path := filepath.Join(dir, "ledger.key")
		const starts = 8
		ids := make([]string, starts)
		created := make([]bool, starts)
		errs := make([]error, starts)
		var wg sync.WaitGroup
		for i := range starts {
			wg.Go(func() {
				var k *ledger.Key
				k, created[i], errs[i] = ledger.LoadOrCreateKey(path)
				if k != nil {
					ids[i] = k.ID
				}
			})
		}
		wg.Wait()
		made := 0
		for i := range starts {
			require.NoError(t, errs[i])
			assert.Equal(t, ids[0], ids[i])
			if created[i] {
				made++
			}
		}
		assert.Equal(t, 1, made, "one start made the key")
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		require.Len(t, entries, 1, "only the key is left")
		assert.Equal(t, "ledger.key", entries[0].Name())
	}
}

// A key file others may read, or one that holds no Ed25519 private key, is
// refused, never replaced.
func TestLedgerKeyRefusesAnExposedOrMalformedFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ledger.key")
	_, _, err := ledger.LoadOrCreateKey(path)
	require.NoError(t, err)
	require.NoError(t, os.Chmod(path, 0o644))
	_, _, err = ledger.LoadOrCreateKey(path)
	assert.ErrorContains(t, err, "chmod 600")

	_, rsaLike, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	pkix, err := x509.MarshalPKIXPublicKey(rsaLike.Public())
	require.NoError(t, err)
	for name, body := range map[string]string{
		"empty":       "",
		"garbage":     "not a key\n",
		"public key":  string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pkix})),
		"bad PKCS #8": string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte{1, 2, 3}})),
	} {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
		_, _, err := ledger.LoadOrCreateKey(p)
		assert.Error(t, err, name)
		b, _ := os.ReadFile(p)
		assert.Equal(t, body, string(b), "%s: left as it was", name)
	}
}

// The public key reads back from every form svc shows it in or an operator
// keeps it in.
func TestParsePublicKey(t *testing.T) {
	k, _, err := ledger.LoadOrCreateKey(filepath.Join(t.TempDir(), "ledger.key"))
	require.NoError(t, err)
	info := k.Info()
	assert.Equal(t, "ed25519", info.Algorithm)
	assert.Equal(t, k.ID, info.KeyID)
	asJSON, err := json.Marshal(info)
	require.NoError(t, err)
	for name, s := range map[string]string{
		"hex":    hex.EncodeToString(k.Public),
		"base64": base64.StdEncoding.EncodeToString(k.Public),
		"url":    base64.RawURLEncoding.EncodeToString(k.Public),
		"pem":    info.PEM,
		"json":   string(asJSON),
		"spaces": "  " + info.PublicKey + "\n",
	} {
		got, err := ledger.ParsePublicKey(s)
		require.NoError(t, err, name)
		assert.Equal(t, k.Public, got, name)
	}
	for _, bad := range []string{"", "abcd", hex.EncodeToString(make([]byte, 31)), "{", "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"} {
		_, err := ledger.ParsePublicKey(bad)
		assert.Error(t, err, bad)
	}
}
