package pluginapi

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Retried reports whether svc tries an upstream answer of status again,
// on the next provider or on the same one after a wait: a 408, a 429 and
// every 5xx. A caller's 4xx is answered as it is.
func Retried(status int) bool {
	return status == http.StatusRequestTimeout || status == http.StatusTooManyRequests || status >= 500
}

// RetryAfter is the wait an upstream's answer asks for before it is tried
// again: retry-after-ms (milliseconds, as OpenAI sends it), else
// Retry-After (RFC 9110: seconds or an HTTP date), at most MaxRetryAfter;
// 0 when neither says, says nonsense, or the answer is not one svc tries
// again (Retried), whose wait means nothing to svc.
func RetryAfter(resp *http.Response, now time.Time) time.Duration {
	if !Retried(resp.StatusCode) {
		return 0
	}
	limit := MaxRetryAfter
	var d time.Duration
	if v := strings.TrimSpace(resp.Header.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			d = time.Duration(min(ms, float64(limit.Milliseconds())) * float64(time.Millisecond))
		}
	}
	if v := strings.TrimSpace(resp.Header.Get("Retry-After")); d == 0 && v != "" {
		if secs, err := strconv.ParseFloat(v, 64); err == nil {
			if secs > 0 {
				d = time.Duration(min(secs, limit.Seconds()) * float64(time.Second))
			}
		} else if at, err := http.ParseTime(v); err == nil {
			d = min(at.Sub(now), limit)
		}
	}
	return max(d, 0)
}
