package som

import (
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCompileErrorKeepsItsCause(t *testing.T) {
	err := error(&CompileError{Op: "parse", Err: io.ErrUnexpectedEOF})
	assert.EqualError(t, err, "som: parse: unexpected EOF")
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
	var ce *CompileError
	assert.True(t, errors.As(err, &ce))
	assert.NotErrorIs(t, err, ErrStale)
}
