package pluginapi_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// RetryAfter reads retry-after-ms, else Retry-After (seconds or a date),
// within a day, and only on an answer svc tries again.
func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		headers map[string]string
		want    time.Duration
	}{
		{"seconds", map[string]string{"Retry-After": "7"}, 7 * time.Second},
		{"fractional seconds", map[string]string{"Retry-After": "0.25"}, 250 * time.Millisecond},
		{"milliseconds win over seconds", map[string]string{"Retry-After-Ms": "1200", "Retry-After": "2"}, 1200 * time.Millisecond},
		{"unusable milliseconds fall back to seconds", map[string]string{"Retry-After-Ms": "soon", "Retry-After": "2"}, 2 * time.Second},
		{"HTTP date", map[string]string{"Retry-After": now.Add(90 * time.Second).Format(http.TimeFormat)}, 90 * time.Second},
		{"date in the past", map[string]string{"Retry-After": now.Add(-time.Minute).Format(http.TimeFormat)}, 0},
		{"negative", map[string]string{"Retry-After": "-3"}, 0},
		{"an hour", map[string]string{"Retry-After": "3600"}, time.Hour},
		{"beyond a day, cut to a day", map[string]string{"Retry-After": "172800"}, pluginapi.MaxRetryAfter},
		{"milliseconds beyond a day", map[string]string{"Retry-After-Ms": "1e12"}, pluginapi.MaxRetryAfter},
		{"a date beyond a day", map[string]string{"Retry-After": now.Add(49 * time.Hour).Format(http.TimeFormat)}, pluginapi.MaxRetryAfter},
		{"out of float range", map[string]string{"Retry-After": "1e400"}, 0},
		{"not a number", map[string]string{"Retry-After": "NaN"}, 0},
		{"garbage", map[string]string{"Retry-After": "tomorrow-ish"}, 0},
		{"absent", nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := &http.Response{StatusCode: http.StatusTooManyRequests, Header: http.Header{}}
			for k, v := range tc.headers {
				resp.Header.Set(k, v)
			}
			assert.Equal(t, tc.want, pluginapi.RetryAfter(resp, now))
		})
	}
	for status, retried := range map[int]bool{408: true, 429: true, 500: true, 503: true, 529: true, 400: false, 404: false, 422: false} {
		resp := &http.Response{StatusCode: status, Header: http.Header{"Retry-After": {"3"}}}
		assert.Equal(t, retried, pluginapi.Retried(status), "HTTP %d", status)
		want := time.Duration(0)
		if retried {
			want = 3 * time.Second
		}
		assert.Equal(t, want, pluginapi.RetryAfter(resp, now), "HTTP %d", status)
	}
}
