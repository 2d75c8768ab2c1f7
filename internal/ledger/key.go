package ledger

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/svc-gateway/svc/internal/conffile"
)

// Key is the ledger's signing key: an Ed25519 key kept in a file outside
// the database, so that someone who can write the database cannot sign a
// checkpoint for what they wrote.
type Key struct {
	ID      string // KeyID of Public
	Public  ed25519.PublicKey
	private ed25519.PrivateKey
}

// KeyID names a public key in checkpoints: the first 8 bytes of its
// SHA-256, as hex.
func KeyID(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return hex.EncodeToString(sum[:8])
}

func newKey(priv ed25519.PrivateKey) *Key {
	pub := priv.Public().(ed25519.PublicKey)
	return &Key{ID: KeyID(pub), Public: pub, private: priv}
}

// maxKeyFile bounds the key file: a PEM key is some hundred bytes.
const maxKeyFile = 64 << 10

// pemPrivate and pemPublic are the PEM block types of the key file (PKCS
// #8) and of a public key (PKIX), as openssl writes them.
const (
	pemPrivate = "PRIVATE KEY"
	pemPublic  = "PUBLIC KEY"
)

// LoadOrCreateKey reads the signing key at path, or, when there is no file,
// makes a new key and writes it there with mode 0600 (its folder created
// when missing), reporting that it did. A key file that others than its
// owner may read, or that does not hold an Ed25519 private key, is refused:
// the ledger is only as good as its key's secrecy.
func LoadOrCreateKey(path string) (*Key, bool, error) {
	b, err := conffile.Read(path, maxKeyFile)
	if errors.Is(err, fs.ErrNotExist) {
		k, err := createKey(path)
		if errors.Is(err, fs.ErrExist) {
			return LoadOrCreateKey(path) // another process made it first: use theirs
		}
		return k, err == nil, err
	}
	if err != nil {
		return nil, false, err
	}
	if err := checkPrivate(path); err != nil {
		return nil, false, err
	}
	k, err := parsePrivateKey(b)
	if err != nil {
		return nil, false, fmt.Errorf("%s: %w", path, err)
	}
	return k, false, nil
}

// createKey makes a new key and puts it at path whole or not at all: it is
// written and synced under a temporary name, then linked to path, which
// fails with fs.ErrExist when another process put its key there first. A
// crash part way leaves no half-written key that would stop every later
// start.
func createKey(path string) (*Key, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("create the ledger key's folder: %w", err)
	}
	f, err := os.CreateTemp(dir, ".ledger-key-*") // mode 0600
	if err != nil {
		return nil, fmt.Errorf("create the ledger key: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	err = pem.Encode(f, &pem.Block{Type: pemPrivate, Bytes: der})
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("write the ledger key: %w", err)
	}
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil, err
		}
		return nil, fmt.Errorf("create the ledger key: %w", err)
	}
	syncDir(dir)
	return newKey(priv), nil
}

// syncDir makes a new name in dir durable, where the system allows it.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync() // not supported everywhere; the key is written either way
		_ = d.Close()
	}
}

// checkPrivate refuses a key file that its group or others may use.
func checkPrivate(path string) error {
	if runtime.GOOS == "windows" {
		return nil // no mode bits to read; the file's ACL is the operator's
	}
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", path)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("%s has mode %04o: the ledger key must be readable by its owner only (chmod 600 %s)", path, perm, path)
	}
	return nil
}

func parsePrivateKey(b []byte) (*Key, error) {
	block, rest := pem.Decode(b)
	if block == nil || block.Type != pemPrivate || strings.TrimSpace(string(rest)) != "" {
		return nil, errors.New("not a PEM \"PRIVATE KEY\" block (PKCS #8), alone in the file")
	}
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("not a PKCS #8 private key: %w", err)
	}
	priv, ok := key.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("a %T, not an Ed25519 key", key)
	}
	return newKey(priv), nil
}

// PublicKeyInfo is the ledger's public key as GET /api/v1/ledger/key shows
// it, to be kept apart from svc and given to svc verify.
type PublicKeyInfo struct {
	Algorithm string `json:"algorithm"` // "ed25519"
	KeyID     string `json:"keyId"`
	PublicKey string `json:"publicKey"` // hex
	PEM       string `json:"pem"`       // PKIX, as openssl pkey -pubout writes it
}

// Info returns the key's public half as the API shows it.
func (k *Key) Info() PublicKeyInfo {
	der, err := x509.MarshalPKIXPublicKey(k.Public)
	if err != nil {
		panic(err) // an Ed25519 public key always marshals
	}
	return PublicKeyInfo{Algorithm: "ed25519", KeyID: k.ID, PublicKey: hex.EncodeToString(k.Public),
		PEM: string(pem.EncodeToMemory(&pem.Block{Type: pemPublic, Bytes: der}))}
}

// ParsePublicKey reads an Ed25519 public key given as hex, as base64 (std
// or URL alphabet), as a PEM "PUBLIC KEY" block, or as the JSON of GET
// /api/v1/ledger/key.
func ParsePublicKey(s string) (ed25519.PublicKey, error) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "{") {
		var info PublicKeyInfo
		if err := json.Unmarshal([]byte(s), &info); err != nil {
			return nil, fmt.Errorf("public key JSON: %w", err)
		}
		return ParsePublicKey(info.PublicKey)
	}
	if block, _ := pem.Decode([]byte(s)); block != nil {
		if block.Type != pemPublic {
			return nil, fmt.Errorf("a PEM %q block, not a \"PUBLIC KEY\"", block.Type)
		}
		key, err := x509.ParsePKIXPublicKey(block.Bytes)
		if err != nil {
			return nil, err
		}
		pub, ok := key.(ed25519.PublicKey)
		if !ok {
			return nil, fmt.Errorf("a %T, not an Ed25519 key", key)
		}
		return pub, nil
	}
	if raw, err := hex.DecodeString(s); err == nil && len(raw) == ed25519.PublicKeySize {
		return ed25519.PublicKey(raw), nil
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		if raw, err := enc.DecodeString(s); err == nil && len(raw) == ed25519.PublicKeySize {
			return ed25519.PublicKey(raw), nil
		}
	}
	return nil, errors.New("not an Ed25519 public key (64 hex characters, base64 of 32 bytes, a PEM \"PUBLIC KEY\" or the JSON of GET /api/v1/ledger/key)")
}
