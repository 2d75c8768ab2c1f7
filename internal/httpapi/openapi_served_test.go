package httpapi_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The API description needs no credentials, also where everything else
// under /api/v1 does: with a bootstrap key and in account mode.
func TestOpenAPIDocumentIsPublic(t *testing.T) {
	ts := newServer(t, bootstrap, accountEnv())
	assert.Equal(t, 401, ts.call(t, "GET", "/api/v1/runs", "", "").status)
	res := ts.call(t, "GET", "/api/v1/openapi.json", "", "")
	require.Equal(t, 200, res.status, res.body)
	assert.Contains(t, res.header.Get("Content-Type"), "application/json")
	assert.Regexp(t, `^3\.1\.\d+$`, res.json["openapi"])
	paths, _ := res.json["paths"].(map[string]any)
	assert.Contains(t, paths, "/v1/chat/completions")
}
