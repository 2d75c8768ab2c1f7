package ids_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/svc-gateway/svc/internal/ids"
)

func TestNew(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := ids.New("key")
		assert.True(t, ids.Valid("key", id), id)
		assert.False(t, seen[id])
		seen[id] = true
	}
	for _, bad := range []string{"", "key_", "run_aaaaaaaaaaaaaaaaaaaa", "key_aaaaaaaaaaaaaaaaaaa", "key_aaaaaaaaaaaaaaaaaaaaa",
		"key_AAAAAAAAAAAAAAAAAAAA", "key_aaaaaaaaaaaaaaaaaa01", "key_../../../../../../a"} {
		assert.False(t, ids.Valid("key", bad), bad)
	}
}

func TestSecret(t *testing.T) {
	a, b := ids.Secret(), ids.Secret()
	assert.Len(t, a, 43, "256 bits in unpadded base64url")
	assert.NotEqual(t, a, b)
}
