package email

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"

	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// flaky fails its first sends.
type flaky struct {
	mu    sync.Mutex
	fails int
	sent  []pluginapi.EmailMessage
	tries int
	block chan struct{}
}

func (f *flaky) Send(_ context.Context, msg pluginapi.EmailMessage) (string, error) {
	if f.block != nil {
		<-f.block
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tries++
	if f.tries <= f.fails {
		return "", errors.New("relay refused")
	}
	f.sent = append(f.sent, msg)
	return "id", nil
}

func TestAFailedSendIsRetried(t *testing.T) {
	tr := &flaky{fails: 2}
	m := NewMailer(tr, "svc <no-reply@example.com>", hclog.NewNullLogger())
	m.backoff = []time.Duration{time.Millisecond, time.Millisecond, time.Millisecond}
	m.Send("ann@example.com", VerifyEmail(Verify{VerifyURL: "https://x/verify"}))
	assert.Eventually(t, func() bool {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		return len(tr.sent) == 1
	}, 5*time.Second, time.Millisecond)
	m.Close()
	assert.Equal(t, 3, tr.tries)
	assert.Equal(t, []string{"ann@example.com"}, tr.sent[0].To)
	assert.Equal(t, "svc <no-reply@example.com>", tr.sent[0].From)
	assert.Equal(t, "Verify your email address", tr.sent[0].Subject)
}

func TestSendNeverBlocksTheCaller(t *testing.T) {
	tr := &flaky{block: make(chan struct{})}
	m := NewMailer(tr, "svc <no-reply@example.com>", hclog.NewNullLogger())
	done := make(chan struct{})
	go func() {
		for range QueueSize + 10 { // more than the queue holds, the transport stuck
			m.Send("ann@example.com", Message{Subject: "x"})
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Send blocked")
	}
	close(tr.block)
	m.Close()
	assert.LessOrEqual(t, len(tr.sent), QueueSize+1, "what did not fit was dropped")
	assert.GreaterOrEqual(t, len(tr.sent), QueueSize, "what was queued was sent at Close")
}
