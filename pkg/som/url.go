package som

import (
	"net/url"
	"sort"
	"strings"
)

// resolve returns ref resolved against base, or "" when ref is not a URL.
// Only http(s) results are kept, plus javascript:, which callers flag.
func resolve(base *url.URL, ref string) string {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return ""
	}
	if len(ref) > 11 && strings.EqualFold(ref[:11], "javascript:") {
		return "javascript:"
	}
	u, err := url.Parse(ref)
	if err != nil {
		return ""
	}
	if base != nil {
		u = base.ResolveReference(u)
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https", "mailto", "tel":
		return u.String()
	case "":
		return u.String()
	}
	return ""
}

// tracking are query parameters that identify the visit, not the target.
var tracking = map[string]bool{
	"fbclid": true, "gclid": true, "dclid": true, "msclkid": true, "yclid": true, "mc_cid": true,
	"mc_eid": true, "_ga": true, "_gl": true, "igshid": true, "spm": true, "ref_": true,
	"sessionid": true, "session_id": true, "sid": true, "phpsessid": true, "jsessionid": true,
	"zenid": true, "oscsid": true,
}

// hrefKey is the identity form of a link target: no scheme, no fragment, no
// tracking or session parameters, lowercased, the remaining query sorted,
// and long digit or hex runs (session ids, cache busters) masked, so that the
// same link keeps its id across visits.
func hrefKey(href string) string {
	if href == "" || href == "javascript:" {
		return href
	}
	u, err := url.Parse(href)
	if err != nil {
		return maskRuns(strings.ToLower(href))
	}
	q := u.Query()
	keys := make([]string, 0, len(q))
	for k := range q {
		lk := strings.ToLower(k)
		if tracking[lk] || strings.HasPrefix(lk, "utm_") {
			continue
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(strings.ToLower(u.Host))
	b.WriteString(strings.ToLower(u.EscapedPath()))
	for i, k := range keys {
		if i == 0 {
			b.WriteByte('?')
		} else {
			b.WriteByte('&')
		}
		vs := q[k]
		sort.Strings(vs)
		b.WriteString(strings.ToLower(k))
		b.WriteByte('=')
		b.WriteString(strings.ToLower(strings.Join(vs, ",")))
	}
	if u.Opaque != "" {
		b.WriteString(strings.ToLower(u.Opaque))
	}
	return maskRuns(b.String())
}

// maskRuns replaces every run of 16 or more hex characters with '*'.
func maskRuns(s string) string {
	var b strings.Builder
	run := 0
	flush := func(end int) {
		if run >= 16 {
			b.WriteByte('*')
		} else {
			b.WriteString(s[end-run : end])
		}
		run = 0
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= '0' && c <= '9' || c >= 'a' && c <= 'f' {
			run++
			continue
		}
		flush(i)
		b.WriteByte(c)
	}
	flush(len(s))
	return b.String()
}

// hostOf returns the lowercased host of a URL, "" when there is none.
func hostOf(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return ""
	}
	return strings.ToLower(u.Hostname())
}

// maxHrefContext bounds an href in the context; the snapshot keeps it whole.
const maxHrefContext = 64

// display shortens a resolved href for the context: same-site links lose
// scheme and host, tracking parameters go, and the result is at most
// maxHrefContext bytes.
func display(page *url.URL, href string) string {
	u, err := url.Parse(href)
	if err != nil {
		return clip(href, 80)
	}
	q := u.Query()
	changed := false
	for k := range q {
		lk := strings.ToLower(k)
		if tracking[lk] || strings.HasPrefix(lk, "utm_") {
			q.Del(k)
			changed = true
		}
	}
	if changed {
		u.RawQuery = q.Encode()
	}
	if page != nil && sameSite(u.Host, page.Host) && (u.Scheme == "http" || u.Scheme == "https") {
		u.Scheme, u.Host, u.User = "", "", nil
	}
	return clip(u.String(), maxHrefContext)
}

// sameSite reports whether two hosts are one site, "www." aside.
func sameSite(a, b string) bool {
	a, b = strings.TrimPrefix(strings.ToLower(a), "www."), strings.TrimPrefix(strings.ToLower(b), "www.")
	return a == b
}
