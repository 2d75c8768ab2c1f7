package ids_test

import (
	"testing"
	"time"

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

func TestOrderedIDsSortByTime(t *testing.T) {
	base := time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)
	prev := ""
	for i := range 2000 {
		id := ids.Ordered("run", base.Add(time.Duration(i)*time.Millisecond))
		if !ids.Valid("run", id) {
			t.Fatalf("%q is not a valid run id", id)
		}
		if id <= prev {
			t.Fatalf("%q minted after %q sorts before it", id, prev)
		}
		prev = id
	}
	a, b := ids.Ordered("run", base), ids.Ordered("run", base)
	if a == b || a[:4+9] != b[:4+9] {
		t.Fatalf("same millisecond: same 9-character prefix, different ids: %q %q", a, b)
	}
	late := ids.Ordered("run", time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC))
	if late <= ids.Ordered("run", base) {
		t.Fatal("the year 3000 sorts after 2026")
	}
}

// Ids minted in the same millisecond differ by their random bits.
func TestOrderedIDsOfOneMillisecondDiffer(t *testing.T) {
	at := time.UnixMilli(1_800_000_000_123)
	seen := map[string]bool{}
	for range 1000 {
		id := ids.Ordered("run", at)
		assert.False(t, seen[id], id)
		seen[id] = true
	}
}

func TestOrderedTimeReadsTheMintingTime(t *testing.T) {
	for _, at := range []time.Time{time.UnixMilli(0), time.UnixMilli(1_800_000_000_123), time.Date(3000, 1, 2, 3, 4, 5, 6e6, time.UTC)} {
		got, ok := ids.OrderedTime(ids.Ordered("run", at))
		assert.True(t, ok)
		assert.True(t, at.Equal(got), "%v != %v", at, got)
	}
	for _, bad := range []string{"", "run", "run_short", "run_" + "!!!!!!!!!aaaaaaaaaaa"} {
		_, ok := ids.OrderedTime(bad)
		assert.False(t, ok, bad)
	}
}
