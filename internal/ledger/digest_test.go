package ledger

import (
	"encoding/hex"
	"encoding/json"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// storedOf is rec as a store would read it back.
func storedOf(t *testing.T, rec *Record) StoredRun {
	t.Helper()
	explanation, err := rec.ExplanationJSON()
	require.NoError(t, err)
	return StoredRun{Run: *rec.Run, Explanation: explanation, Chain: rec.Chain,
		Events: append([]Event(nil), rec.Events...), Head: rec.Head}
}

// Every field of a run but its event count enters the digest, each on its
// own: a field added to Run without a place in Digest fails here.
func TestDigestCoversEveryField(t *testing.T) {
	rec := sampleRecord("run_1", json.RawMessage(`{"id":"x"}`))
	stored := storedOf(t, rec)
	require.Equal(t, rec.Digest, stored.Digest(), "recomputed from the same fields")

	v := reflect.ValueOf(&stored.Run).Elem()
	for i := range v.NumField() {
		name := v.Type().Field(i).Name
		if name == "EventCount" {
			continue // the chain's, not the run's
		}
		changed := stored
		f := reflect.ValueOf(&changed.Run).Elem().Field(i)
		switch f.Interface().(type) {
		case string:
			f.SetString(f.String() + "x")
		case int, int64:
			f.SetInt(f.Int() + 1)
		case float64:
			f.SetFloat(f.Float() + 0.5)
		case bool:
			f.SetBool(!f.Bool())
		case time.Time:
			f.Set(reflect.ValueOf(changed.Run.CreatedAt.Add(time.Millisecond)))
		case json.RawMessage:
			f.SetBytes(append([]byte(`{"x":1,`), f.Bytes()[1:]...))
		case RouteExplanation:
			changed.Explanation = []byte(`{"route":"exact_cache"}`) // the stored bytes are what is hashed
		default:
			t.Fatalf("field %s: no mutation for its type", name)
		}
		assert.NotEqual(t, rec.Digest, changed.Digest(), "field %s", name)
	}

	noResponse := stored
	noResponse.Run.Response = nil
	empty := stored
	empty.Run.Response = json.RawMessage{}
	assert.Equal(t, noResponse.Digest(), empty.Digest(), "an empty answer is a missing one, as the store reads it back")
	assert.NotEqual(t, noResponse.Digest(), stored.Digest())
	nullAnswer := stored
	nullAnswer.Run.Response = json.RawMessage(`null`)
	assert.NotEqual(t, noResponse.Digest(), nullAnswer.Digest(), "a missing answer is not a JSON null")

	zero := stored
	zero.Run.SavedUSD = 0
	negative := zero
	negative.Run.SavedUSD = math.Copysign(0, -1)
	assert.Equal(t, zero.Digest(), negative.Digest(), "-0 reads back from SQLite as 0")
}

// A run without a trace id keeps the digest it had before runs named
// their trace: the digests of runs already recorded, and the checkpoints
// over them, stay valid.
func TestDigestWithoutTraceIDIsUnchanged(t *testing.T) {
	rec := sampleRecord("run_1", json.RawMessage(`{"id":"x"}`))
	d := Digest(rec.Run, storedOf(t, rec).Explanation)
	assert.Equal(t, "337adf4a7fc7a24666964437f828011c280642c1f0df556592a1109d74eda20a", hex.EncodeToString(d[:]))
}

// An edited field of a run breaks its chain at the first event, named as
// the run's mismatch; a ChainV1 run (its seed binds no digest) does not
// see it.
func TestStoredRunVerify(t *testing.T) {
	rec := sampleRecord("run_1", json.RawMessage(`{"id":"x"}`))
	stored := storedOf(t, rec)
	require.True(t, stored.Verify().OK)

	edited := storedOf(t, rec)
	edited.Run.Response = json.RawMessage(`{"id":"y"}`)
	res := edited.Verify()
	assert.False(t, res.OK)
	require.NotNil(t, res.BrokenAt)
	assert.Equal(t, 0, *res.BrokenAt)
	assert.Equal(t, ReasonRunMismatch, res.Reason)

	edited = storedOf(t, rec)
	edited.Run.CostUSD = 0
	assert.Equal(t, ReasonRunMismatch, edited.Verify().Reason)

	none := storedOf(t, rec)
	none.Events, none.Head = []Event{}, Head{}
	res = none.Verify()
	assert.False(t, res.OK)
	assert.Equal(t, ReasonNoEvents, res.Reason)

	v1 := storedOf(t, rec)
	v1.Chain = ChainV1
	v1.Events = chainV1(t, rec)
	v1.Head.Hash = v1.Events[len(v1.Events)-1].Hash
	require.True(t, v1.Verify().OK)
	v1.Run.CostUSD = 0
	assert.True(t, v1.Verify().OK, "a ChainV1 seed does not bind the run's fields")
}

// chainV1 chains rec's events again from a ChainV1 seed, as an older build
// did.
func chainV1(t *testing.T, rec *Record) []Event {
	t.Helper()
	events := append([]Event(nil), rec.Events...)
	chain(Seed(ChainV1, rec.Run.TenantID, rec.Run.ID, Hash{}), 0, events, time.Time{})
	return events
}
