//go:build unix

package pluginapi

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"
)

// upstreamProvider calls an upstream over HTTP as a provider plugin does:
// its calls' goroutines need the stack of an HTTP round trip.
type upstreamProvider struct {
	echoProvider
	client *http.Client
	url    string
}

func (u *upstreamProvider) Chat(ctx context.Context, req ChatRequest) (ChatResponse, error) {
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, u.url, bytes.NewReader(req.Body))
	if err != nil {
		return ChatResponse{}, err
	}
	res, err := u.client.Do(r)
	if err != nil {
		return ChatResponse{}, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	return ChatResponse{Body: body}, err
}

// BenchmarkChatCalls is non-streamed chat calls over the shared stream to
// a plugin that calls an upstream, a few at a time; cpu-ns/op is the CPU
// of both sides and the upstream, per call.
func BenchmarkChatCalls(b *testing.B) {
	impl := newUpstreamProvider(b)
	p, _, _ := serveOver(b, &providerServer{impl: impl})
	benchmarkChat(b, p)
}

// BenchmarkChatCallsInProcess is BenchmarkChatCalls with the provider
// called directly, as a provider in in_process mode is: what it saves on
// BenchmarkChatCalls's cpu-ns/op is the CPU of the two gRPC legs with both
// sides in one process (between two processes, their wakeups add more).
func BenchmarkChatCallsInProcess(b *testing.B) {
	benchmarkChat(b, newUpstreamProvider(b))
}

// newUpstreamProvider is an upstreamProvider calling an upstream that
// answers at once.
func newUpstreamProvider(b *testing.B) *upstreamProvider {
	answer := []byte(`{"id":"chatcmpl-bench","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"ok"}}]}`)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = w.Write(answer)
	}))
	b.Cleanup(upstream.Close)
	return &upstreamProvider{client: NewUpstreamClient(), url: upstream.URL}
}

// benchmarkChat makes non-streamed chat calls to p, two goroutines a CPU,
// and reports the process's CPU per call.
func benchmarkChat(b *testing.B, p Provider) {
	body := []byte(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Write one sentence about benchmarks."}]}`)
	b.ReportAllocs()
	b.SetParallelism(2)
	b.ResetTimer()
	start := processCPU()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := p.Chat(context.Background(), ChatRequest{Body: body}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(processCPU()-start)/float64(b.N), "cpu-ns/op")
}

// processCPU is the CPU time the process has used, user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
