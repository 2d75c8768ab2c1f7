package plugins

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// fakeSlot dispenses a new fakeProvider each time, as a restart would.
type fakeSlot struct {
	dispensed, resets int
	chunks            int // chunks each provider streams before it dies
}

func (s *fakeSlot) Dispense(context.Context) (any, error) {
	s.dispensed++
	return &fakeProvider{chunks: s.chunks}, nil
}

func (s *fakeSlot) Reset(any) { s.resets++ }

// fakeProvider is a plugin process that dies: its calls fail as
// unreachable, a stream after sending chunks.
type fakeProvider struct{ chunks int }

var errGone = &pluginapi.UnavailableError{Err: errors.New("connection reset")}

func (p *fakeProvider) Chat(context.Context, pluginapi.ChatRequest) (pluginapi.ChatResponse, error) {
	return pluginapi.ChatResponse{}, errGone
}

func (p *fakeProvider) StreamChat(_ context.Context, _ pluginapi.ChatRequest, send func(pluginapi.ChatChunk) error) error {
	for range p.chunks {
		if err := send(pluginapi.ChatChunk{Data: []byte(`{"chunk":1}`)}); err != nil {
			return err
		}
	}
	return errGone
}

func (p *fakeProvider) Models(context.Context) ([]pluginapi.Model, error) { return nil, errGone }

func TestAPluginThatDiesBeforeAnsweringIsRestartedOnce(t *testing.T) {
	slot := &fakeSlot{}
	p := &provider{slot: slot}
	_, err := p.Chat(context.Background(), pluginapi.ChatRequest{})
	var unavailable *pluginapi.UnavailableError
	require.ErrorAs(t, err, &unavailable)
	assert.Equal(t, 2, slot.dispensed, "tried on a fresh process once more")
	assert.Equal(t, 2, slot.resets, "each failed process is dropped")

	slot = &fakeSlot{}
	err = (&provider{slot: slot}).StreamChat(context.Background(), pluginapi.ChatRequest{}, func(pluginapi.ChatChunk) error { return nil })
	require.ErrorAs(t, err, &unavailable)
	assert.Equal(t, 2, slot.dispensed, "a stream that sent nothing is tried again too")
}

func TestAStreamCutAfterItsFirstChunkIsNotReplayed(t *testing.T) {
	slot := &fakeSlot{chunks: 1}
	got := 0
	err := (&provider{slot: slot}).StreamChat(context.Background(), pluginapi.ChatRequest{}, func(pluginapi.ChatChunk) error {
		got++
		return nil
	})
	var unavailable *pluginapi.UnavailableError
	require.ErrorAs(t, err, &unavailable, "the cause stays inspectable")
	assert.ErrorContains(t, err, "provider stream interrupted")
	assert.Equal(t, 1, got, "the client has each chunk once")
	assert.Equal(t, 1, slot.dispensed, "no retry can continue a partial answer")
	assert.Equal(t, 1, slot.resets, "the dead process is dropped")
}

// A plugin slow to start (here one that never completes the handshake)
// holds no caller past its deadline, nor the host's shutdown.
func TestCallersWaitForAPluginStartNoLongerThanTheirDeadline(t *testing.T) {
	path := filepath.Join(t.TempDir(), "svc-never-ready")
	require.NoError(t, os.WriteFile(path, []byte("#!/bin/sh\nexec sleep 60\n"), 0o755))
	slot, err := NewSlot(pluginapi.ProviderName, path, nil, hclog.NewNullLogger())
	require.NoError(t, err)
	p := &provider{slot: slot}

	done := make(chan error, 3)
	for range 3 {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			_, err := p.Chat(ctx, pluginapi.ChatRequest{})
			done <- err
		}()
	}
	for range 3 {
		select {
		case err := <-done:
			assert.ErrorIs(t, err, context.DeadlineExceeded, "a timeout, not the plugin unavailable")
		case <-time.After(5 * time.Second):
			t.Fatal("a caller waited for the start past its deadline")
		}
	}

	killed := make(chan struct{})
	go func() {
		slot.Kill()
		close(killed)
	}()
	select {
	case <-killed:
	case <-time.After(5 * time.Second):
		t.Fatal("shutdown waited for the start to time out")
	}
	_, err = slot.Dispense(context.Background())
	assert.ErrorIs(t, err, errShutDown)
}
