package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/pkg/pluginapi"
)

func TestSendPostsTheMessage(t *testing.T) {
	var got sendRequest
	var auth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = r.Header.Get("Authorization")
		require.NoError(t, json.NewDecoder(r.Body).Decode(&got))
		_, _ = w.Write([]byte(`{"id":"msg_123"}`))
	}))
	defer srv.Close()
	s := &Sender{URL: srv.URL, Key: "re_key_0123", Client: srv.Client()}
	id, err := s.Send(context.Background(), pluginapi.EmailMessage{From: "svc <no-reply@example.com>", To: []string{"ann@example.com"},
		Subject: "Verify your email", Text: "Open https://x/verify", HTML: "<a href=\"https://x/verify\">Verify</a>"})
	require.NoError(t, err)
	assert.Equal(t, "msg_123", id)
	assert.Equal(t, "Bearer re_key_0123", auth)
	assert.Equal(t, sendRequest{From: "svc <no-reply@example.com>", To: []string{"ann@example.com"}, Subject: "Verify your email",
		Text: "Open https://x/verify", HTML: "<a href=\"https://x/verify\">Verify</a>"}, got)
}

func TestARefusalIsAnErrorWithoutTheKey(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"message":"invalid key re_key_0123"}`, http.StatusUnauthorized)
	}))
	defer srv.Close()
	_, err := (&Sender{URL: srv.URL, Key: "re_key_0123", Client: srv.Client()}).Send(context.Background(), pluginapi.EmailMessage{To: []string{"a@b.c"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "401")
	assert.NotContains(t, err.Error(), "re_key_0123")
}
