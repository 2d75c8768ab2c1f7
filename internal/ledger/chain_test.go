package ledger_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/ledger"
)

func chainOf(n int, tenantID, runID string) ([]ledger.Event, ledger.Head) {
	events := make([]ledger.Event, n)
	for i := range events {
		events[i] = ledger.Event{Type: fmt.Sprintf("type.%d", i%3), Payload: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))}
	}
	rec := ledger.NewRecord(&ledger.Run{ID: runID, TenantID: tenantID}, events, time.UnixMilli(1_700_000_000_000))
	return rec.Events, rec.Head
}

// verify verifies events as the chain of the run chainOf made.
func verify(tenantID, runID string, events []ledger.Event, head ledger.Head) ledger.Integrity {
	rec := ledger.NewRecord(&ledger.Run{ID: runID, TenantID: tenantID}, nil, time.Time{})
	return ledger.Verify(ledger.Seed(rec.Chain, tenantID, runID, rec.Digest), events, head)
}

func clone(events []ledger.Event) []ledger.Event { return append([]ledger.Event(nil), events...) }

func TestVerifyWholeChains(t *testing.T) {
	for _, n := range []int{1, 2, 3, 10, 100} {
		events, head := chainOf(n, "t1", "run_a")
		res := verify("t1", "run_a", events, head)
		assert.True(t, res.OK, "n=%d", n)
		assert.Equal(t, n, res.Events)
		assert.Nil(t, res.BrokenAt)
	}
}

// Every field of every event, changed on its own, is detected at that event.
func TestVerifyDetectsEveryMutation(t *testing.T) {
	mutations := map[string]func(e *ledger.Event){
		"seq":      func(e *ledger.Event) { e.Seq += 7 },
		"type":     func(e *ledger.Event) { e.Type += "x" },
		"at":       func(e *ledger.Event) { e.At = e.At.Add(time.Millisecond) },
		"payload":  func(e *ledger.Event) { e.Payload = json.RawMessage(`{"i":-1}`) },
		"prevHash": func(e *ledger.Event) { e.PrevHash[0] ^= 1 },
		"hash":     func(e *ledger.Event) { e.Hash[31] ^= 1 },
	}
	for _, n := range []int{1, 2, 3, 10, 100} {
		events, head := chainOf(n, "t1", "run_a")
		for i := range n {
			for name, mutate := range mutations {
				bad := clone(events)
				mutate(&bad[i])
				res := verify("t1", "run_a", bad, head)
				require.False(t, res.OK, "n=%d i=%d %s", n, i, name)
				require.NotNil(t, res.BrokenAt)
				assert.Equal(t, i, *res.BrokenAt, "n=%d i=%d %s: %s", n, i, name, res.Reason)
			}
		}
	}
}

func TestVerifyDetectsStructuralTampering(t *testing.T) {
	events, head := chainOf(10, "t1", "run_a")
	check := func(name string, bad []ledger.Event, h ledger.Head, at int, reason string) {
		t.Helper()
		res := verify("t1", "run_a", bad, h)
		require.False(t, res.OK, name)
		assert.Equal(t, at, *res.BrokenAt, name)
		assert.Equal(t, reason, res.Reason, name)
	}
	for i := range 9 {
		check(fmt.Sprintf("delete %d", i), append(clone(events[:i]), events[i+1:]...), head, i, ledger.ReasonSequenceGap)
	}
	check("delete last", clone(events[:9]), head, 9, ledger.ReasonCountMismatch)
	swapped := clone(events)
	swapped[2], swapped[5] = swapped[5], swapped[2]
	check("swap", swapped, head, 2, ledger.ReasonSequenceGap)

	// A forged event appended with a valid link but no head update.
	forged := ledger.Event{Seq: 10, Type: "forged", At: time.UnixMilli(1), Payload: json.RawMessage(`{}`), PrevHash: events[9].Hash}
	forged.Hash = ledger.Link(forged.PrevHash, &forged)
	check("forged append", append(clone(events), forged), head, 10, ledger.ReasonCountMismatch)
	// The same, with the count raised but not the head hash.
	check("forged append, count raised", append(clone(events), forged), ledger.Head{Count: 11, Hash: head.Hash}, 10, ledger.ReasonHeadMismatch)

	// Events of another run (or tenant) never verify here, even whole.
	other, otherHead := chainOf(10, "t1", "run_b")
	check("spliced from another run", other, otherHead, 0, ledger.ReasonRunMismatch)
	foreign, foreignHead := chainOf(10, "t2", "run_a")
	check("spliced from another tenant", foreign, foreignHead, 0, ledger.ReasonRunMismatch)

	// A run whose events were all deleted, its head set to match.
	check("no events", nil, ledger.Head{}, 0, ledger.ReasonNoEvents)
	check("no events, head kept", nil, head, 0, ledger.ReasonNoEvents)
}

func TestCanonical(t *testing.T) {
	a, err := ledger.CanonicalPayload([]byte(`{ "b": 1, "a": {"d": 12345678901234567890, "c": "<x>"} }`))
	require.NoError(t, err)
	assert.JSONEq(t, `{"a":{"c":"<x>","d":12345678901234567890},"b":1}`, string(a))
	assert.Equal(t, `{"a":{"c":"<x>","d":12345678901234567890},"b":1}`, string(a), "sorted, compact, numbers as written")
	for _, bad := range []string{`[]`, `1`, `"x"`, `{`, `{} {}`, `null`} {
		_, err := ledger.CanonicalPayload([]byte(bad))
		assert.Error(t, err, bad)
	}
}

func TestHashJSON(t *testing.T) {
	events, _ := chainOf(1, "t", "r")
	b, err := json.Marshal(events[0].Hash)
	require.NoError(t, err)
	assert.Len(t, string(b), 66)
	var back ledger.Hash
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, events[0].Hash, back)
	assert.Error(t, json.Unmarshal([]byte(`"zz"`), &back))
}

// FuzzVerify: any single-byte change to a valid chain's payloads is caught
// at the changed event.
func FuzzVerify(f *testing.F) {
	f.Add(uint8(0), uint8(0), uint8(1))
	f.Add(uint8(9), uint8(3), uint8(255))
	f.Fuzz(func(t *testing.T, idx, pos, delta uint8) {
		if delta == 0 {
			return
		}
		events, head := chainOf(10, "t", "run_f")
		i := int(idx) % len(events)
		p := append([]byte(nil), events[i].Payload...)
		p[int(pos)%len(p)] += delta
		events[i].Payload = p
		res := verify("t", "run_f", events, head)
		if res.OK || *res.BrokenAt != i {
			t.Fatalf("mutation at event %d not detected there: %+v", i, res)
		}
	})
}
