package httpstatus_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/httpstatus"
	"github.com/svc-gateway/svc/pkg/pluginapi"
)

func TestOf(t *testing.T) {
	refused := func(status int) error {
		return fmt.Errorf("chat: %w", &errs.Error{Kind: httpstatus.KindOf(status), Err: &pluginapi.ProviderError{Status: status}})
	}
	for _, tc := range []struct {
		name string
		err  error
		want int
	}{
		{"no error", nil, 200},
		{"unclassified", errors.New("boom"), 500},
		{"invalid", errs.Invalidf("x", "bad"), 400},
		{"not found, wrapped", fmt.Errorf("get: %w", errs.NotFoundf("no key")), 404},
		{"rate limited", errs.E(errs.RateLimited, "rate_limited", "slow down"), 429},
		{"upstream", errs.E(errs.Upstream, "upstream_error", "down"), 502},
		{"timeout", errs.E(errs.Timeout, "request_timeout", "late"), 408},
		{"a provider's 422 stays 422", refused(422), 422},
		{"a provider's 404", refused(404), 404},
		{"a provider's 401 is svc's upstream failure", refused(401), 502},
		{"a provider's 503", refused(503), 502},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, httpstatus.Of(tc.err)) })
	}
}

func TestKindOf(t *testing.T) {
	for status, want := range map[int]errs.Kind{
		400: errs.Invalid, 401: errs.Upstream, 402: errs.Invalid, 403: errs.Forbidden, 404: errs.NotFound,
		407: errs.Upstream, 408: errs.Upstream, 409: errs.Conflict, 413: errs.TooLarge, 415: errs.Invalid,
		422: errs.Invalid, 429: errs.RateLimited, 500: errs.Upstream, 503: errs.Upstream, 0: errs.Upstream, 200: errs.Upstream,
	} {
		assert.Equal(t, want, httpstatus.KindOf(status), "status %d", status)
	}
}
