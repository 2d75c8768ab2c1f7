package openai

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// embedder is p's Embedder, which both modes have.
func embedder(t *testing.T, p pluginapi.Provider) pluginapi.Embedder {
	t.Helper()
	e, ok := p.(pluginapi.Embedder)
	require.True(t, ok, "%T is no Embedder", p)
	return e
}

func embedReq(body string) pluginapi.EmbedRequest {
	return pluginapi.EmbedRequest{Body: []byte(body), Model: "text-embedding-3-small", RequestID: "run_9"}
}

func TestEmbedPassesBodyThrough(t *testing.T) {
	reqBody := `{"model":"text-embedding-3-small", "input":["a<b","é"],"dimensions":2,"encoding_format":"base64","user":"u1","x_vendor":1}`
	respBody := `{"object":"list","data":[{"object":"embedding","index":0,"embedding":"AACAPwAAAAA="},` +
		`{"object":"embedding","index":1,"embedding":"AAAAAAAAgD8="}],"model":"text-embedding-3-small","usage":{"prompt_tokens":5,"total_tokens":5}}`
	var method, path string
	var header http.Header
	var got []byte
	srv := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		method, path, header = r.Method, r.URL.Path, r.Header.Clone()
		got, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, respBody)
	})
	modes(t, srv.URL+"/v1", func(t *testing.T, p pluginapi.Provider) {
		res, err := embedder(t, p).Embed(context.Background(), embedReq(reqBody))
		require.NoError(t, err)
		assert.Equal(t, http.MethodPost, method)
		assert.Equal(t, "/v1/embeddings", path)
		assert.Equal(t, reqBody, string(got), "the body reaches the upstream byte for byte")
		assert.Equal(t, "Bearer "+testKey, header.Get("Authorization"))
		assert.Equal(t, "run_9", header.Get("X-Request-Id"))
		assert.Equal(t, respBody, string(res.Body), "the answer comes back unchanged")
		assert.Equal(t, pluginapi.Usage{PromptTokens: 5, TotalTokens: 5}, res.Usage)
	})
}

func TestEmbedUnknownModelIsTheUpstreams404(t *testing.T) {
	srv := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"error":{"message":"The model `+"`text-embedding-9`"+` does not exist or you do not have access to it.","type":"invalid_request_error","param":null,"code":"model_not_found"}}`)
	})
	modes(t, srv.URL, func(t *testing.T, p pluginapi.Provider) {
		_, err := embedder(t, p).Embed(context.Background(), embedReq(`{"model":"text-embedding-9","input":"a"}`))
		pe := requireProviderError(t, err)
		assert.Equal(t, pluginapi.ProviderError{Status: 404, Type: "invalid_request_error", Code: "model_not_found",
			Message: "The model `text-embedding-9` does not exist or you do not have access to it."}, *pe)

		// The same for chat: an unknown chat model is the upstream's 404.
		_, err = p.Chat(context.Background(), chatReq(`{"model":"gpt-9","messages":[{"role":"user","content":"hi"}]}`))
		assert.Equal(t, "model_not_found", requireProviderError(t, err).Code)
	})
}

func TestEmbedErrorMapping(t *testing.T) {
	for _, tc := range errorCases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newFake(t, func(w http.ResponseWriter, r *http.Request) {
				if tc.contentType != "" {
					w.Header().Set("Content-Type", tc.contentType)
				} else if tc.body != "" {
					w.Header().Set("Content-Type", "application/json")
				}
				if tc.status == 302 {
					w.Header().Set("Location", "/elsewhere")
				}
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			})
			modes(t, srv.URL, func(t *testing.T, p pluginapi.Provider) {
				_, err := embedder(t, p).Embed(context.Background(), embedReq(`{"model":"m","input":"a"}`))
				pe := requireProviderError(t, err)
				assert.Equal(t, tc.want.Status, pe.Status)
				assert.Equal(t, tc.want.Code, pe.Code)
				assert.NotContains(t, pe.Error(), testKey)
			})
		})
	}
}

func TestEmbedBadSuccessBodies(t *testing.T) {
	for name, body := range map[string]string{
		"not json":      `<html>`,
		"an array":      `[1,2]`,
		"no data":       `{"object":"list","usage":{"prompt_tokens":1}}`,
		"data not list": `{"object":"list","data":{}}`,
		"in-body error": `{"error":{"message":"overloaded","type":"server_error"}}`,
	} {
		srv := newFake(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, body)
		})
		modes(t, srv.URL, func(t *testing.T, p pluginapi.Provider) {
			_, err := embedder(t, p).Embed(context.Background(), embedReq(`{"model":"m","input":"a"}`))
			assert.Equal(t, http.StatusBadGateway, requireProviderError(t, err).Status, name)
		})
	}
}

func TestModelsMarkEmbeddingsAndLeaveOutWhatSvcCannotAnswer(t *testing.T) {
	srv := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"object":"list","data":[{"id":"gpt-4o-mini"},{"id":"text-embedding-3-large"},{"id":"dall-e-3"},`+
			`{"id":"whisper-1"},{"id":"gpt-4o-mini-tts"},{"id":"omni-moderation-latest"},{"id":"gpt-4o-realtime-preview"},`+
			`{"id":"o3-pro"},{"id":"nomic-embed-text:latest"},{"id":"llama3.1:8b"}]}`)
	})
	modes(t, srv.URL, func(t *testing.T, p pluginapi.Provider) {
		models, err := p.Models(context.Background())
		require.NoError(t, err)
		kinds := map[string]string{}
		for _, m := range models {
			kinds[m.ID] = m.Kind
		}
		assert.Equal(t, map[string]string{"gpt-4o-mini": "chat", "text-embedding-3-large": "embedding",
			"nomic-embed-text:latest": "embedding", "llama3.1:8b": "chat"}, kinds)
	})
}

// A float batch of 2048 inputs at 1536 dimensions is larger than a chat
// answer may be; it comes back whole.
func TestEmbedLargestBatchIsRead(t *testing.T) {
	const inputs, dims = 2048, 1536
	srv := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		bw := bufio.NewWriterSize(w, 64<<10)
		bw.WriteString(`{"object":"list","data":[`)
		for i := range inputs {
			if i > 0 {
				bw.WriteByte(',')
			}
			fmt.Fprintf(bw, `{"object":"embedding","index":%d,"embedding":[`, i)
			for j := range dims {
				if j > 0 {
					bw.WriteByte(',')
				}
				bw.WriteString("-0.012345678")
			}
			bw.WriteString("]}")
		}
		bw.WriteString(`],"model":"text-embedding-3-small","usage":{"prompt_tokens":2048,"total_tokens":2048}}`)
		bw.Flush()
	})
	modes(t, srv.URL, func(t *testing.T, p pluginapi.Provider) {
		res, err := embedder(t, p).Embed(context.Background(), embedReq(`{"model":"text-embedding-3-small","input":["a"]}`))
		require.NoError(t, err)
		assert.Greater(t, len(res.Body), DefaultMaxResponseBytes, "the batch is over the chat cap")
		assert.Equal(t, int64(2048), res.Usage.PromptTokens)
	})
}

// An embeddings answer larger than the plugin connection takes, sized or
// not, is refused in the provider's shape with what to ask for instead.
func TestEmbedAnswerOverTheCapIsRefusedInWords(t *testing.T) {
	for _, sized := range []bool{true, false} {
		srv := newFake(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			head, item := `{"object":"list","data":[`, `{"object":"embedding","index":0,"embedding":[-0.012345678]},`
			n := (maxEmbeddingsResponseBytes-len(head))/len(item) + 1
			if sized {
				w.Header().Set("Content-Length", strconv.Itoa(len(head)+n*len(item)+2))
			}
			bw := bufio.NewWriterSize(w, 64<<10)
			bw.WriteString(head)
			for range n {
				if _, err := bw.WriteString(item); err != nil {
					return
				}
			}
			bw.WriteString("]}")
			bw.Flush()
		})
		modes(t, srv.URL, func(t *testing.T, p pluginapi.Provider) {
			_, err := embedder(t, p).Embed(context.Background(), embedReq(`{"model":"text-embedding-3-large","input":["a"]}`))
			var pe *pluginapi.ProviderError
			require.ErrorAs(t, err, &pe, "sized=%v", sized)
			assert.Equal(t, http.StatusBadGateway, pe.Status)
			assert.Equal(t, codeTooLarge, pe.Code)
			assert.Contains(t, pe.Message, "fewer inputs")
			assert.Contains(t, pe.Message, `encoding_format "base64"`)
		})
	}
	assert.Less(t, maxEmbeddingsResponseBytes, 64<<20, "room in one plugin message")
}

func TestModelKind(t *testing.T) {
	for _, tc := range []struct{ id, kind string }{
		{"gpt-4o-mini", pluginapi.KindChat},
		{"gpt-4.1", pluginapi.KindChat},
		{"o3-mini", pluginapi.KindChat},
		{"llama3.1", pluginapi.KindChat},
		{"gpt-4o-search-preview", pluginapi.KindChat},
		{"text-embedding-3-small", pluginapi.KindEmbedding},
		{"nomic-embed-text", pluginapi.KindEmbedding},
		// Responses only.
		{"codex-mini-latest", ""},
		{"gpt-5-codex", ""},
		{"o1-pro", ""},
		{"o1-pro-2025-03-19", ""},
		{"o3-pro", ""},
		{"gpt-5-pro", ""},
		{"o3-deep-research", ""},
		{"computer-use-preview", ""},
		// Images, audio, video, moderation, realtime.
		{"gpt-image-1", ""},
		{"chatgpt-image-latest", ""},
		{"dall-e-3", ""},
		{"tts-1-hd", ""},
		{"gpt-4o-mini-tts", ""},
		{"whisper-1", ""},
		{"gpt-4o-transcribe", ""},
		{"omni-moderation-latest", ""},
		{"text-moderation-stable", ""},
		{"gpt-4o-realtime-preview", ""},
		{"gpt-realtime", ""},
		{"gpt-4o-audio-preview", ""},
		{"gpt-audio-mini", ""},
		{"sora-2", ""},
		{"davinci-002", ""},
	} {
		assert.Equal(t, tc.kind, modelKind(tc.id), tc.id)
	}
}
