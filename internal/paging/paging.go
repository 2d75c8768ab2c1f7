// Package paging validates the paging parameters of list endpoints, so that
// every listing answers a bad limit the same way.
package paging

import "github.com/svc-gateway/svc/internal/errs"

// Limit checks a requested page size: a negative one is refused, zero asks
// for def, and anything above max is cut to max.
func Limit(n, def, max int) (int, error) {
	switch {
	case n < 0:
		return 0, errs.Invalidf("limit", "limit must not be negative")
	case n == 0:
		return def, nil
	case n > max:
		return max, nil
	}
	return n, nil
}

// Offset checks a requested offset.
func Offset(n int) (int, error) {
	if n < 0 {
		return 0, errs.Invalidf("offset", "offset must not be negative")
	}
	return n, nil
}
