package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// nChoices is a chat.completion read for its choices.
type nChoices struct {
	Choices []struct {
		Index   int `json:"index"`
		Message struct {
			Content string `json:"content"`
		} `json:"message"`
	} `json:"choices"`
	Usage struct {
		PromptTokens     int64 `json:"prompt_tokens"`
		CompletionTokens int64 `json:"completion_tokens"`
	} `json:"usage"`
}

// n choices end to end: the mock answers n distinct choices, svc prices
// every choice's tokens, caches the answer whole (a replay, plain or
// streamed, has all n) and keeps a cached answer of one n from another.
func TestNChoicesPricedAndCachedWhole(t *testing.T) {
	ts := newServer(t, "", nil)
	body := `{"model":"gpt-4o-mini","n":3,"messages":[{"role":"user","content":"Explain in three sentences why the sky is blue."}]}`

	live := ts.call(t, "POST", "/v1/chat/completions", "", body)
	require.Equal(t, http.StatusOK, live.status, live.body)
	assert.Equal(t, "live", live.header.Get("x-svc-route"))
	var c nChoices
	require.NoError(t, json.Unmarshal([]byte(live.body), &c))
	require.Len(t, c.Choices, 3)
	seen := map[string]bool{}
	for i, ch := range c.Choices {
		assert.Equal(t, i, ch.Index)
		assert.False(t, seen[ch.Message.Content], "choices are distinct")
		seen[ch.Message.Content] = true
	}
	one := ts.call(t, "POST", "/v1/chat/completions", "", strings.Replace(body, `"n":3,`, "", 1))
	require.Equal(t, http.StatusOK, one.status)
	single := decodeCompletion(t, one.body)
	assert.Equal(t, "live", one.header.Get("x-svc-route"), "n=1 is another request")
	assert.Greater(t, c.Usage.CompletionTokens, 2*single.Usage.CompletionTokens, "every choice is counted")

	run := ts.run(t, "", live.header.Get("x-svc-run-id"))["run"].(map[string]any)
	assert.InDelta(t, float64(c.Usage.CompletionTokens), run["completionTokens"], 0)
	want := (float64(c.Usage.PromptTokens)*0.15 + float64(c.Usage.CompletionTokens)*0.60) / 1e6
	assert.InDelta(t, want, run["costUsd"], 1e-12, "priced for every choice")

	replay := ts.call(t, "POST", "/v1/chat/completions", "", body)
	require.Equal(t, http.StatusOK, replay.status)
	assert.Equal(t, "exact_cache", replay.header.Get("x-svc-route"))
	var r nChoices
	require.NoError(t, json.Unmarshal([]byte(replay.body), &r))
	assert.Equal(t, c.Choices, r.Choices, "the replay has all the choices")

	res, events := ts.stream(t, "", strings.Replace(body, `{"model"`, `{"stream":true,"model"`, 1))
	require.Equal(t, http.StatusOK, res.StatusCode)
	assert.Equal(t, "exact_cache", res.Header.Get("x-svc-route"))
	text := map[int]string{}
	for _, e := range events[:len(events)-1] {
		var ch struct {
			Choices []struct {
				Index int `json:"index"`
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
		}
		require.NoError(t, json.Unmarshal([]byte(e), &ch), e)
		for _, x := range ch.Choices {
			text[x.Index] += x.Delta.Content
		}
	}
	for i, ch := range c.Choices {
		assert.Equal(t, ch.Message.Content, text[i], "choice %d replayed as a stream", i)
	}
}

// A streamed answer of n choices is assembled whole into the cache.
func TestNChoicesStreamedThenReplayed(t *testing.T) {
	ts := newServer(t, "", nil)
	body := `{"model":"gpt-4o-mini","n":2,"stream":true,"messages":[{"role":"user","content":"Name two uses of a paperclip."}]}`
	res, events := ts.stream(t, "", body)
	require.Equal(t, http.StatusOK, res.StatusCode)
	assert.Equal(t, "live", res.Header.Get("x-svc-route"))
	indices := map[int]bool{}
	for _, e := range events[:len(events)-1] {
		var ch struct {
			Choices []struct {
				Index int `json:"index"`
			} `json:"choices"`
		}
		require.NoError(t, json.Unmarshal([]byte(e), &ch), e)
		for _, x := range ch.Choices {
			indices[x.Index] = true
		}
	}
	assert.Equal(t, map[int]bool{0: true, 1: true}, indices)

	replay := ts.call(t, "POST", "/v1/chat/completions", "", strings.Replace(body, `"stream":true,`, "", 1))
	require.Equal(t, http.StatusOK, replay.status)
	assert.Equal(t, "exact_cache", replay.header.Get("x-svc-route"))
	var r nChoices
	require.NoError(t, json.Unmarshal([]byte(replay.body), &r))
	require.Len(t, r.Choices, 2)
	assert.NotEqual(t, r.Choices[0].Message.Content, r.Choices[1].Message.Content)
}
