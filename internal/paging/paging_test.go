package paging_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/paging"
)

func TestLimit(t *testing.T) {
	for in, want := range map[int]int{0: 50, 1: 1, 50: 50, 500: 500, 501: 500, 1 << 30: 500} {
		got, err := paging.Limit(in, 50, 500)
		require.NoError(t, err)
		assert.Equal(t, want, got, "limit %d", in)
	}
	_, err := paging.Limit(-1, 50, 500)
	assert.Equal(t, "limit", errs.As(err).Param)
	_, err = paging.Offset(-1)
	assert.Equal(t, "offset", errs.As(err).Param)
	n, err := paging.Offset(7)
	require.NoError(t, err)
	assert.Equal(t, 7, n)
}
