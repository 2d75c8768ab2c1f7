package jsonread

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An object's members come with their keys; what is not read is skipped
// whole, brackets and quotes inside strings included.
func TestObjectAndSkip(t *testing.T) {
	d := New([]byte(` { "a" : [1, {"x": "]}\""}], "b": "two", "c": null, "d": -1.5e3 } `))
	got := map[string]string{}
	ok := d.Object(func(key []byte) bool {
		switch string(key) {
		case "b":
			d.Peek() // Token starts past white space
			got["b"] = string(d.Token())
			return true
		case "c":
			got["c"] = "null"
			return d.Null()
		case "d":
			got["d"] = string(d.Number())
			return true
		}
		return d.Skip()
	})
	require.True(t, ok)
	assert.Equal(t, map[string]string{"b": `"two"`, "c": "null", "d": "-1.5e3"}, got)
	assert.Equal(t, byte(0), d.Peek(), "read to the end")
}

// A key written with escapes is left to the caller's decoder, which
// decides what it names.
func TestEscapedKeysGiveUp(t *testing.T) {
	d := New([]byte(`{"\u0061": 1}`))
	assert.False(t, d.Object(func([]byte) bool { return d.Skip() }))
}

func TestArrayAndRaw(t *testing.T) {
	d := New([]byte(`[ {"k": [1,2]}, "s" ]`))
	var raws []json.RawMessage
	isNull, ok := d.Array(func() bool {
		var r json.RawMessage
		if !d.Raw(&r) {
			return false
		}
		raws = append(raws, r)
		return true
	})
	require.True(t, ok)
	assert.False(t, isNull)
	assert.Equal(t, []json.RawMessage{json.RawMessage(`{"k": [1,2]}`), json.RawMessage(`"s"`)}, raws)

	d = New([]byte(`null`))
	isNull, ok = d.Array(func() bool { return false })
	assert.True(t, isNull)
	assert.True(t, ok)

	d = New([]byte(`"no number"`))
	assert.Nil(t, d.Number())
}

func TestFloat(t *testing.T) {
	d := New([]byte(`-1.5e3`))
	f, ok := d.Float()
	assert.True(t, ok)
	assert.InDelta(t, -1500.0, f, 0)
	for _, bad := range []string{`"1"`, `null`, `1e999`} {
		d = New([]byte(bad))
		_, ok = d.Float()
		assert.False(t, ok, bad)
	}
}
