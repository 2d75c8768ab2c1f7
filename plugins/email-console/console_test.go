package main

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/pkg/pluginapi"
)

func TestTheMessageIsReadBackFromTheLog(t *testing.T) {
	var out bytes.Buffer
	c := &Console{Log: hclog.New(&hclog.LoggerOptions{Output: &out, JSONFormat: true})}
	id, err := c.Send(context.Background(), pluginapi.EmailMessage{From: "svc <no-reply@localhost>", To: []string{"ann@example.com"},
		Subject: "You are invited", Text: "Accept: https://svc.example.com/accept-invite?token=abc", HTML: "<p>Accept</p>"})
	require.NoError(t, err)
	assert.Equal(t, "console-1", id)
	var line map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &line))
	assert.Equal(t, "email", line["@message"])
	assert.Equal(t, "ann@example.com", line["to"])
	assert.Equal(t, "You are invited", line["subject"])
	assert.Contains(t, line["text"], "https://svc.example.com/accept-invite?token=abc", "the link is in the log")
}
