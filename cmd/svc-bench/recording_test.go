package main

import (
	"encoding/binary"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The recording relay answers what the upstream answered, after it
// journaled the call and its answer in one frame; a request that is not a
// chat call is refused before it goes anywhere.
func TestRecordingRelayJournalsEachCall(t *testing.T) {
	const answer = `{"model":"m","usage":{"prompt_tokens":3,"completion_tokens":4}}`
	calls := 0
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		_, _ = io.WriteString(w, answer)
	}))
	defer upstream.Close()
	to, err := url.Parse(upstream.URL)
	require.NoError(t, err)
	rec, err := newRecorder()
	require.NoError(t, err)
	defer rec.file.Close()
	relay := httptest.NewServer(recording(httputil.NewSingleHostReverseProxy(to), rec))
	defer relay.Close()

	const request = `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
	res, err := http.Post(relay.URL+"/chat/completions", "application/json", strings.NewReader(request))
	require.NoError(t, err)
	got, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	_ = res.Body.Close()
	assert.Equal(t, http.StatusOK, res.StatusCode)
	assert.Equal(t, answer, string(got))

	frame := make([]byte, 8+len(request)+len(answer))
	_, err = rec.file.ReadAt(frame, 0)
	require.NoError(t, err)
	assert.Equal(t, uint32(len(request)), binary.LittleEndian.Uint32(frame))
	assert.Equal(t, uint32(len(answer)), binary.LittleEndian.Uint32(frame[4:]))
	assert.Equal(t, request+answer, string(frame[8:]))

	res, err = http.Post(relay.URL+"/chat/completions", "application/json", strings.NewReader(`{"model":"m"}`))
	require.NoError(t, err)
	_ = res.Body.Close()
	assert.Equal(t, http.StatusBadRequest, res.StatusCode)
	assert.Equal(t, 1, calls, "a refused request never reaches the upstream")
}
