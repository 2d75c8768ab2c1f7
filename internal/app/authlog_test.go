package app_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/app"
	"github.com/svc-gateway/svc/internal/config"
	"github.com/svc-gateway/svc/internal/logtest"
)

// The "listening" line names the mode svc really admits callers in.
func TestListeningLogNamesTheAuthMode(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"open", nil, "open dev mode"},
		{"account", map[string]string{"SVC_REQUIRE_LOGIN": "true"}, "account mode"},
		{"bearer", map[string]string{"SVC_API_KEY": "0123456789abcdef-bootstrap"}, "bearer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.FromEnv(func(k string) string {
				if k == "SVC_ADDR" {
					return "127.0.0.1:0"
				}
				return tc.env[k]
			})
			require.NoError(t, err)
			var logs logtest.Buffer
			logger := hclog.New(&hclog.LoggerOptions{Output: &logs, JSONFormat: true, Level: hclog.Info})
			a, err := app.New(context.Background(), app.Options{
				Config: cfg, Logger: logger, DataDir: t.TempDir(), Provider: &heldProvider{}, Mailer: noMail{},
			})
			require.NoError(t, err)
			require.NoError(t, a.Start(context.Background()))
			require.NoError(t, a.Close())
			var mode string
			for line := range strings.SplitSeq(logs.String(), "\n") {
				var entry map[string]any
				if json.Unmarshal([]byte(line), &entry) == nil && entry["@message"] == "listening" {
					mode, _ = entry["auth"].(string)
				}
			}
			assert.True(t, strings.HasPrefix(mode, tc.want), "auth %q, want %q", mode, tc.want)
		})
	}
}
