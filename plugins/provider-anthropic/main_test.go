package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/testbin"
	"github.com/svc-gateway/svc/pkg/pluginapi"
)

func TestMain(m *testing.M) { os.Exit(testbin.Main(m)) }

func binary(t *testing.T) string {
	return filepath.Join(testbin.PluginDir(t), "svc-provider-anthropic")
}

// The built plugin, started as svc starts it, reads its configuration from
// the environment and answers through Anthropic's API.
func TestThePluginBinaryServes(t *testing.T) {
	var gotKey, gotHeader string
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotKey, gotHeader = r.Header.Get("X-Api-Key"), r.Header.Get("X-Team")
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"msg_1","type":"message","role":"assistant","model":"claude-haiku-4-5","content":[{"type":"text","text":"Hi."}],
		  "stop_reason":"end_turn","usage":{"input_tokens":9,"output_tokens":2}}`))
	}))
	t.Cleanup(upstream.Close)

	cmd := exec.Command(binary(t))
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, pluginapi.ProviderConfig{
		BaseURL: upstream.URL, APIKey: "sk-ant-e2e", Headers: map[string]string{"X-Team": "search"},
	}.Env()...)
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  pluginapi.Handshake,
		Plugins:          pluginapi.PluginMap(),
		Cmd:              cmd,
		SkipHostEnv:      true,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		AutoMTLS:         true,
		Logger:           hclog.NewNullLogger(),
	})
	t.Cleanup(client.Kill)
	rpc, err := client.Client()
	require.NoError(t, err)
	raw, err := rpc.Dispense(pluginapi.ProviderName)
	require.NoError(t, err)
	p := raw.(pluginapi.Provider)

	res, err := p.Chat(context.Background(), pluginapi.ChatRequest{
		Body: []byte(`{"model":"claude-haiku-4-5","messages":[{"role":"user","content":"Hello"}]}`), Model: "claude-haiku-4-5",
	})
	require.NoError(t, err)
	var c struct {
		Object  string `json:"object"`
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	require.NoError(t, json.Unmarshal(res.Body, &c))
	assert.Equal(t, "chat.completion", c.Object)
	assert.Equal(t, "Hi.", c.Choices[0].Message.Content)
	assert.Equal(t, pluginapi.Usage{PromptTokens: 9, CompletionTokens: 2, TotalTokens: 11}, res.Usage)
	assert.Equal(t, "sk-ant-e2e", gotKey)
	assert.Equal(t, "search", gotHeader)
}

func TestABadConfigurationExits1(t *testing.T) {
	cmd := exec.Command(binary(t))
	cmd.Env = []string{
		pluginapi.Handshake.MagicCookieKey + "=" + pluginapi.Handshake.MagicCookieValue,
		"PROVIDER_BASE_URL=ftp://example.com",
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	assert.Equal(t, 1, exit.ExitCode())
	assert.Contains(t, stderr.String(), "PROVIDER_BASE_URL")
}
