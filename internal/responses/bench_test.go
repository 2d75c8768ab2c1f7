package responses_test

import (
	"testing"

	"github.com/svc-gateway/svc/internal/responses"
)

var (
	benchRequest = []byte(`{"model":"gpt-4o-mini","instructions":"Classify the ticket as one of: billing, bug, feature_request.",
		"input":[{"role":"user","content":[{"type":"input_text","text":"I was charged twice for my invoice this month."}]}],
		"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}],
		"max_output_tokens":64}`)
	benchCompletion = []byte(`{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o-mini",
		"choices":[{"index":0,"message":{"role":"assistant","content":"billing"},"finish_reason":"stop"}],
		"usage":{"prompt_tokens":40,"completion_tokens":1,"total_tokens":41}}`)
	benchChunks = [][]byte{
		[]byte(`{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`),
		[]byte(`{"choices":[{"index":0,"delta":{"content":"bill"}}]}`),
		[]byte(`{"choices":[{"index":0,"delta":{"content":"ing"}}]}`),
		[]byte(`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`),
		[]byte(`{"choices":[],"usage":{"prompt_tokens":40,"completion_tokens":1,"total_tokens":41}}`),
	}
)

// BenchmarkTranslate is what a non-streamed call adds over chat: the
// request translated and the completion turned into a response.
func BenchmarkTranslate(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		r, err := responses.Parse(benchRequest)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := r.Chat(nil, nil); err != nil {
			b.Fatal(err)
		}
		resp := r.Response("resp_aaaaaaaaaaaaaaaaaaaa", 1)
		if err := responses.FromCompletion(&resp, benchCompletion); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStream is what a streamed call's translation adds: its events
// from a short stream of chunks.
func BenchmarkStream(b *testing.B) {
	r, err := responses.Parse(benchRequest)
	if err != nil {
		b.Fatal(err)
	}
	emit := func(string, []byte) error { return nil }
	b.ReportAllocs()
	for b.Loop() {
		s := responses.NewStream(r.Response("resp_aaaaaaaaaaaaaaaaaaaa", 1), emit)
		_ = s.Start()
		for _, c := range benchChunks {
			_ = s.Chunk(c)
		}
		_ = s.Finish()
	}
}
