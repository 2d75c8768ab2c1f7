package ledger_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/ledger"
	"github.com/svc-gateway/svc/internal/strictjson"
)

// A payload whose object repeats a key would be recorded with one of the
// two values only: the chain would hash something other than what was
// sent. It is refused, in any letter case and at any depth.
func TestCanonicalRefusesRepeatedKeys(t *testing.T) {
	for _, c := range []struct{ payload, param string }{
		{`{"amount":1,"amount":1000}`, "amount"},
		{`{"to":"a","TO":"b"}`, "TO"},
		{`{"items":[{"sku":"x"},{"sku":"y","sku":"z"}]}`, "items[1].sku"},
	} {
		_, err := ledger.CanonicalPayload([]byte(c.payload))
		var keyErr *strictjson.KeyError
		require.ErrorAs(t, err, &keyErr, c.payload)
		assert.Equal(t, c.param, keyErr.Param())
	}
	got, err := ledger.CanonicalPayload([]byte(`{"to":"a","To2":"b","nested":{"To":"c"}}`))
	require.NoError(t, err, "distinct keys, and one spelling per object")
	assert.Equal(t, `{"To2":"b","nested":{"To":"c"},"to":"a"}`, string(got))
}
