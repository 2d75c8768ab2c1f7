package accounts_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/svc-gateway/svc/internal/accounts"
)

func TestNormalizeEmail(t *testing.T) {
	for in, want := range map[string]string{
		"Jane@Example.COM":   "jane@example.com",
		"  bob@example.com ": "bob@example.com",
	} {
		got, err := accounts.NormalizeEmail(in)
		assert.NoError(t, err, in)
		assert.Equal(t, want, got)
	}
	for _, bad := range []string{"", "jane", "Jane <jane@example.com>", "a@b@c", "jane@example.com\r\nBcc: x@y.z", string(make([]byte, 300)) + "@x.io"} {
		_, err := accounts.NormalizeEmail(bad)
		assert.Error(t, err, "%q", bad)
	}
}

func TestOrgNameFor(t *testing.T) {
	assert.Equal(t, "acme.com", accounts.OrgNameFor("jane@acme.com", "Jane"))
	assert.Equal(t, "Jane's org", accounts.OrgNameFor("jane@gmail.com", "Jane"))
	assert.Equal(t, "Jo's org", accounts.OrgNameFor("jo@proton.me", "Jo"))
	for domain := range accounts.GenericMailDomains {
		assert.Equal(t, "X's org", accounts.OrgNameFor("x@"+domain, "X"), domain)
	}
}
