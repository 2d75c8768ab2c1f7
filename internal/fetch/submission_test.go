package fetch

import (
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/html"

	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/formsubmit"
)

// A submission goes out through the Fetcher, so its action is checked like
// any navigation.
func TestSubmissionThroughFetcher(t *testing.T) {
	t.Parallel()
	f, _, _ := testFetcher(t, Options{})
	s := submission(t, `<form method=post action="http://public.test/echo"><input name=q value="a b"></form>`)
	res, err := f.Do(withTimeout(t), s, nil)
	require.NoError(t, err)
	assert.Contains(t, string(res.Body), "body=q=a+b")

	s = submission(t, `<form id=evil method=post action="http://169.254.169.254/latest"><input name=q></form>`)
	_, err = f.Do(withTimeout(t), s, nil)
	requireKind(t, err, errs.Forbidden, "private_address")
}

// submission builds the request that submitting the first form of src,
// without a submitter, sends.
func submission(t *testing.T, src string) *Request {
	t.Helper()
	d, err := html.Parse(strings.NewReader(src))
	require.NoError(t, err)
	var form *html.Node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if form == nil && n.Type == html.ElementNode && n.Data == "form" {
			form = n
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(d)
	require.NotNil(t, form, "no form in %s", src)
	page, err := url.Parse("http://shop.test/dir/page.html?from=1")
	require.NoError(t, err)
	sub, err := formsubmit.Build(form, nil, formsubmit.State{}, page)
	require.NoError(t, err)
	return &Request{Method: sub.Method, URL: sub.URL, Body: sub.Body, ContentType: sub.ContentType}
}
