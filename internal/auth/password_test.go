package auth_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/auth"
)

var cheap = auth.Argon2Params{MemoryKiB: 64, Time: 1, Threads: 1}

func TestDefaultArgon2MeetsOWASPMinimum(t *testing.T) {
	p := auth.DefaultArgon2
	assert.GreaterOrEqual(t, p.MemoryKiB, uint32(19*1024), "at least 19 MiB")
	assert.GreaterOrEqual(t, p.Time, uint32(2))
	assert.GreaterOrEqual(t, p.Threads, uint8(1))
}

func TestHashEncodesItsParametersAndVerifies(t *testing.T) {
	h := auth.NewHasher(auth.DefaultArgon2)
	enc, err := h.Hash("hunter2 hunter2")
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(enc, "$argon2id$v=19$m=19456,t=2,p=1$"), enc)
	assert.True(t, h.Verify("hunter2 hunter2", enc))
	assert.False(t, h.Verify("hunter2 hunter3", enc))
	assert.False(t, h.Verify("", enc))

	again, err := h.Hash("hunter2 hunter2")
	require.NoError(t, err)
	assert.NotEqual(t, enc, again, "a fresh salt each time")
	assert.False(t, h.NeedsRehash(enc))
}

func TestVerifyReadsTheParametersOfTheHash(t *testing.T) {
	old := auth.NewHasher(cheap)
	enc, err := old.Hash("a long enough secret")
	require.NoError(t, err)
	stronger := auth.NewHasher(auth.DefaultArgon2)
	assert.True(t, stronger.Verify("a long enough secret", enc), "a hash made with older parameters still verifies")
	assert.True(t, stronger.NeedsRehash(enc), "and is marked for an upgrade")
}

func TestVerifyRefusesMalformedHashes(t *testing.T) {
	h := auth.NewHasher(cheap)
	for _, enc := range []string{"", "plain", "$argon2i$v=19$m=64,t=1,p=1$c2FsdHNhbHQ$a2V5a2V5a2V5a2V5a2V5a2V5", "$argon2id$v=19$m=0,t=1,p=1$c2FsdA$a2V5",
		"$argon2id$v=19$m=999999999,t=1,p=1$c2FsdHNhbHQ$a2V5a2V5a2V5a2V5a2V5a2V5", "$argon2id$v=18$m=64,t=1,p=1$c2FsdA$a2V5a2V5a2V5a2V5a2V5a2V5"} {
		assert.False(t, h.Verify("x", enc), enc)
	}
}

func TestValidatePassword(t *testing.T) {
	assert.Error(t, auth.ValidatePassword("seven77"))
	assert.NoError(t, auth.ValidatePassword("eight888"))
	assert.NoError(t, auth.ValidatePassword("ünïcödé"+"x"), "length counts characters")
	assert.Error(t, auth.ValidatePassword(strings.Repeat("x", auth.MaxPasswordLen+1)))
}

// BenchmarkHashPassword reports the cost of one password hash with the
// production parameters: the time a login or signup spends hashing.
func BenchmarkHashPassword(b *testing.B) {
	h := auth.NewHasher(auth.DefaultArgon2)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := h.Hash("correct horse battery staple"); err != nil {
			b.Fatal(err)
		}
	}
}

var fuzzCost = regexp.MustCompile(`m=(\d+),t=(\d+)`)

// FuzzVerify feeds Verify stored hashes it did not write: it must refuse
// them without panicking or hashing with absurd parameters.
func FuzzVerify(f *testing.F) {
	h := auth.NewHasher(cheap)
	good, err := h.Hash("password")
	require.NoError(f, err)
	f.Add("password", good)
	f.Add("x", "$argon2id$v=19$m=64,t=1,p=1$$")
	f.Add("x", "$argon2id$v=19$m=64,t=1,p=0$c2FsdA$a2V5a2V5a2V5a2V5a2V5a2V5")
	f.Add("x", "$argon2id$v=19$m=4194304,t=4294967295,p=255$c2FsdA$a2V5a2V5a2V5a2V5a2V5a2V5")
	f.Fuzz(func(t *testing.T, password, encoded string) {
		if m := fuzzCost.FindStringSubmatch(encoded); m != nil && (len(m[1]) > 4 || len(m[2]) > 1) {
			// Costs that would make one iteration take minutes; the
			// parser's bounds are what is under test.
			t.Skip()
		}
		_ = h.Verify(password, encoded)
		_ = h.NeedsRehash(encoded)
	})
}
