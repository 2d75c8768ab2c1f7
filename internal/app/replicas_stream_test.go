package app_test

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A client streaming runs from one replica sees the run another serves.
func TestRunStreamShowsEveryReplicasRuns(t *testing.T) {
	provider := &heldProvider{called: make(chan struct{}), release: make(chan struct{})}
	close(provider.release) // answers at once
	a, b := twoReplicasWith(t, never, provider)

	srv := httptest.NewServer(b.Handler())
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", srv.URL+"/api/v1/runs/stream", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+replicaToken)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode) // subscribed on B from here

	chat := httptest.NewRequest("POST", "/v1/chat/completions", strings.NewReader(chatBody))
	chat.Header.Set("Content-Type", "application/json")
	chat.Header.Set("Authorization", "Bearer "+replicaToken)
	w := httptest.NewRecorder()
	a.Handler().ServeHTTP(w, chat)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	runID := w.Header().Get("x-svc-run-id")
	require.NotEmpty(t, runID)

	// The deadline ends the read if the run never comes.
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		if sc.Text() == "id: "+runID {
			return
		}
	}
	t.Fatalf("the stream through B ended without the run A served: %v", sc.Err())
}
