package errs_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/svc-gateway/svc/internal/errs"
)

func TestClassification(t *testing.T) {
	cause := errors.New("disk on fire")
	e := errs.Wrap(cause, errs.Conflict, "already_revoked", "key %s is revoked", "k1")
	wrapped := fmt.Errorf("revoke: %w", e)

	assert.Equal(t, errs.Conflict, errs.KindOf(wrapped))
	assert.True(t, errs.Is(wrapped, errs.Conflict))
	assert.Equal(t, "already_revoked", errs.Code(wrapped))
	assert.Equal(t, "key k1 is revoked", errs.Public(wrapped))
	assert.ErrorIs(t, wrapped, cause)
	assert.Contains(t, e.Error(), "disk on fire", "the cause is in the log text")
}

func TestUnclassifiedIsInternalAndHidden(t *testing.T) {
	err := errors.New("secret detail")
	assert.Equal(t, errs.Internal, errs.KindOf(err))
	assert.Equal(t, "internal error", errs.Public(err))
	assert.Equal(t, "internal", errs.Code(err))
	assert.Equal(t, "internal error", errs.Public(errs.Wrap(err, errs.Internal, "x", "leaky %s", "text")))
	assert.False(t, errs.Is(nil, errs.Internal))
}

func TestDefaults(t *testing.T) {
	e := &errs.Error{Kind: errs.NotFound}
	assert.Equal(t, "not_found", errs.Code(e))
	assert.Equal(t, "not_found", errs.Public(e))
	p := errs.Invalidf("name", "name is %s", "required")
	assert.Equal(t, "name", p.Param)
	assert.Equal(t, errs.Invalid, p.Kind)
}
