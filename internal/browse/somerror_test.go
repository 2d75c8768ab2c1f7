package browse

import (
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/pkg/som"
)

// somError keeps the kinds, codes and texts svc answered with before som
// had errors of its own.
func TestSOMErrorsKeepTheirKindCodeAndText(t *testing.T) {
	_, _, invalid := som.Compile(som.Input{HTML: []byte("<p>x</p>"), URL: "file:///etc/passwd"})
	parse := &som.CompileError{Op: "parse", Err: io.ErrUnexpectedEOF}
	panicked := &som.CompileError{Op: "compile", Err: errors.New("panic: boom")}
	for _, c := range []struct {
		in     error
		want   *errs.Error
		logged string
	}{
		{invalid, errs.Invalidf("url", "page URL must be an absolute http or https URL"), "page URL must be an absolute http or https URL"},
		{&som.StaleError{ID: "e_abc"}, errs.E(errs.Conflict, "stale_element", "element e_abc changed since the snapshot; read the page again"), ""},
		{&som.StaleError{ID: "r_form_abc", Form: true}, errs.E(errs.Conflict, "stale_element", "form r_form_abc changed since the snapshot; read the page again"), ""},
		{&som.StaleError{ID: "e_abc", Detached: true}, errs.E(errs.Conflict, "stale_element", "element e_abc cannot be acted on"), ""},
		{parse, errs.Wrap(io.ErrUnexpectedEOF, errs.Internal, "som_parse", "page could not be parsed"), "page could not be parsed: unexpected EOF"},
		{panicked, errs.Wrap(panicked.Err, errs.Internal, "som_compile", "page could not be compiled"), "page could not be compiled: panic: boom"},
	} {
		got := errs.As(somError(c.in))
		require.NotNil(t, got, "%v", c.in)
		assert.Equal(t, c.want, got)
		if c.logged != "" {
			assert.EqualError(t, got, c.logged)
		}
	}

	assert.Equal(t, errs.NotFoundf("no element e_abc on this page"), errs.As(somError(&som.NotFoundError{ID: "e_abc"})))
	assert.NoError(t, somError(nil))
	other := errors.New("other")
	assert.Same(t, other, somError(other))
}

// An id the page does not have is the caller's stale view of the session.
func TestResolveActionRefusesAnUnknownTarget(t *testing.T) {
	_, doc, err := som.Compile(som.Input{HTML: []byte(`<form action="/a"><input name=q></form>`), URL: "https://shop.example/"})
	require.NoError(t, err)
	_, err = resolveAction(doc, Action{Action: ActType, Target: "e_00000000"})
	assert.Equal(t, errs.Conflict, errs.KindOf(err))
	assert.Equal(t, "unknown_target", errs.Code(err))
}
