package ledger_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/ledger"
)

func TestFilterValidateNamesTheBadField(t *testing.T) {
	at := time.Unix(1_700_000_000, 0)
	for _, tc := range []struct {
		param string
		f     ledger.Filter
	}{
		{"route", ledger.Filter{Route: "teleport"}},
		{"status", ledger.Filter{Status: "meh"}},
		{"app", ledger.Filter{App: strings.Repeat("a", 201)}},
		{"agent", ledger.Filter{Agent: "\xff"}},
		{"model", ledger.Filter{Model: strings.Repeat("m", 201)}},
		{"q", ledger.Filter{Q: strings.Repeat("q", 201)}},
		{"until", ledger.Filter{Since: at, Until: at}},
		{"until", ledger.Filter{Since: at, Until: at.Add(-time.Second)}},
		{"limit", ledger.Filter{Limit: -1}},
		{"offset", ledger.Filter{Offset: -1}},
	} {
		err := tc.f.Validate()
		require.Error(t, err, tc.param)
		assert.Equal(t, errs.Invalid, errs.KindOf(err), tc.param)
		assert.Equal(t, tc.param, errs.As(err).Param, tc.param)
	}
	f := ledger.Filter{App: "support", Agent: "bot", Model: "gpt-4o", Q: "100%", Since: at, Until: at.Add(time.Second)}
	require.NoError(t, f.Validate())
	assert.Equal(t, ledger.DefaultLimit, f.Limit)
}
