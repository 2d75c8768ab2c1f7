package pluginapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	pb "github.com/svc-gateway/svc/pkg/pluginapi/proto"
)

// echoProvider answers each call with its request body, after waiting for
// release when that is set (or for the call's end).
type echoProvider struct {
	release chan struct{}
	ended   chan error // the ctx error of each call that waited
	started chan time.Time
}

func (e *echoProvider) Chat(ctx context.Context, req ChatRequest) (ChatResponse, error) {
	if e.started != nil {
		deadline, _ := ctx.Deadline()
		e.started <- deadline
	}
	if e.release != nil {
		select {
		case <-e.release:
		case <-ctx.Done():
			e.ended <- ctx.Err()
			return ChatResponse{}, ctx.Err()
		}
	}
	if string(req.Body) == "fail" {
		return ChatResponse{}, &ProviderError{Status: 429, Type: "rate_limit_error", Message: "slow down"}
	}
	return ChatResponse{Body: req.Body, Usage: Usage{TotalTokens: int64(len(req.Body))}}, nil
}

func (e *echoProvider) StreamChat(context.Context, ChatRequest, func(ChatChunk) error) error {
	return errors.New("not streamed here")
}

func (e *echoProvider) Models(context.Context) ([]Model, error) { return nil, nil }

// unaryOnly is a plugin built before ChatCalls: the generated server's
// Unimplemented answer for it.
type unaryOnly struct {
	pb.UnimplementedProviderServer
	impl Provider
}

func (u *unaryOnly) Chat(ctx context.Context, req *pb.ChatRequest) (*pb.ChatResponse, error) {
	return (&providerServer{impl: u.impl}).Chat(ctx, req)
}

// methodCounts counts the gRPC calls a plugin's server receives, by method.
type methodCounts struct {
	mu sync.Mutex
	n  map[string]int
}

func (m *methodCounts) add(method string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.n[method]++
}

func (m *methodCounts) get(method string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.n[method]
}

// serveOver starts a gRPC server with srv as its Provider and returns the
// host's client of it, the server, and the calls the server received.
func serveOver(t testing.TB, srv pb.ProviderServer) (Provider, *grpc.Server, *methodCounts) {
	t.Helper()
	counts := &methodCounts{n: map[string]int{}}
	s := grpc.NewServer(append(ServerOptions(),
		grpc.UnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			counts.add(info.FullMethod)
			return h(ctx, req)
		}),
		grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			counts.add(info.FullMethod)
			return h(srv, ss)
		}))...)
	pb.RegisterProviderServer(s, srv)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(s.Stop)
	p, _ := dialProvider(t, lis.Addr().String())
	return p, s, counts
}

// dialProvider returns the host's client of the plugin server at addr, and
// its connection.
func dialProvider(t testing.TB, addr string) (Provider, *grpc.ClientConn) {
	t.Helper()
	conn, err := grpc.NewClient(addr, append(DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	client, err := (&ProviderPlugin{}).GRPCClient(context.Background(), nil, conn)
	require.NoError(t, err)
	return client.(Provider), conn
}

func TestConcurrentChatCallsShareOneStream(t *testing.T) {
	impl := &echoProvider{}
	p, _, counts := serveOver(t, &providerServer{impl: impl})

	var wg sync.WaitGroup
	var wrong atomic.Int32
	for i := range 50 {
		wg.Go(func() {
			body := fmt.Sprintf(`{"call":%d}`, i)
			res, err := p.Chat(context.Background(), ChatRequest{Body: []byte(body)})
			if err != nil || string(res.Body) != body || res.Usage.TotalTokens != int64(len(body)) {
				wrong.Add(1)
			}
		})
	}
	wg.Wait()
	assert.Zero(t, wrong.Load(), "every call gets its own answer")

	_, err := p.Chat(context.Background(), ChatRequest{Body: []byte("fail")})
	var pe *ProviderError
	require.ErrorAs(t, err, &pe, "an error crosses the stream as a unary call's would")
	assert.Equal(t, &ProviderError{Status: 429, Type: "rate_limit_error", Message: "slow down"}, pe)

	assert.Equal(t, 1, counts.get(pb.Provider_ChatCalls_FullMethodName))
	assert.Zero(t, counts.get(pb.Provider_Chat_FullMethodName))
}

func TestChatFallsBackToUnaryCallsForAnOlderPlugin(t *testing.T) {
	p, _, counts := serveOver(t, &unaryOnly{impl: &echoProvider{}})
	for i := range 3 {
		body := fmt.Sprintf(`{"call":%d}`, i)
		res, err := p.Chat(context.Background(), ChatRequest{Body: []byte(body)})
		require.NoError(t, err)
		assert.Equal(t, body, string(res.Body))
	}
	assert.Equal(t, 1, counts.get(pb.Provider_ChatCalls_FullMethodName), "asked once, then remembered")
	assert.Equal(t, 3, counts.get(pb.Provider_Chat_FullMethodName))
}

func TestCancelledChatCallIsCancelledInThePlugin(t *testing.T) {
	impl := &echoProvider{release: make(chan struct{}), ended: make(chan error, 1), started: make(chan time.Time, 2)}
	p, _, _ := serveOver(t, &providerServer{impl: impl})

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := p.Chat(ctx, ChatRequest{Body: []byte("x")})
		done <- err
	}()
	<-impl.started
	cancel()
	assert.ErrorIs(t, <-done, context.Canceled)
	select {
	case err := <-impl.ended:
		assert.ErrorIs(t, err, context.Canceled, "the plugin's call ends with the caller's")
	case <-time.After(10 * time.Second):
		t.Fatal("the plugin's call went on after the caller cancelled it")
	}

	// The stream goes on serving: a call with a deadline gets it.
	ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	close(impl.release)
	res, err := p.Chat(ctx, ChatRequest{Body: []byte("y")})
	require.NoError(t, err)
	assert.Equal(t, "y", string(res.Body))
	deadline := <-impl.started
	want, _ := ctx.Deadline()
	assert.WithinDuration(t, want, deadline, 5*time.Second, "the plugin's call has the caller's deadline")
}

func TestChatCallsOfADeadPluginAreUnavailable(t *testing.T) {
	impl := &echoProvider{release: make(chan struct{}), ended: make(chan error, 1), started: make(chan time.Time, 1)}
	p, srv, _ := serveOver(t, &providerServer{impl: impl})
	done := make(chan error, 1)
	go func() {
		_, err := p.Chat(context.Background(), ChatRequest{Body: []byte("x")})
		done <- err
	}()
	<-impl.started
	srv.Stop() // the process is gone: connections closed, calls cut
	err := <-done
	var unavailable *UnavailableError
	assert.ErrorAs(t, err, &unavailable, "%v", err)
}

func TestChatCallsKeepTheirDeadlinesBehindAStalledSend(t *testing.T) {
	p, _ := stallSender(t, &echoProvider{})

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := p.Chat(ctx, ChatRequest{Body: []byte("third")})
		done <- err
	}()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, context.DeadlineExceeded)
	case <-time.After(10 * time.Second):
		t.Fatal("a call waiting to send outlived its deadline")
	}
}

// sizedProvider answers "huge" with more than a plugin connection takes,
// holds "wait" until hold closes, and echoes anything else.
type sizedProvider struct {
	echoProvider
	hold    chan struct{}
	waiting chan struct{}
}

func (p *sizedProvider) Chat(ctx context.Context, req ChatRequest) (ChatResponse, error) {
	switch string(req.Body) {
	case "huge":
		return ChatResponse{Body: make([]byte, maxMessage+1)}, nil
	case "wait":
		close(p.waiting)
		<-p.hold
	}
	return ChatResponse{Body: req.Body}, nil
}

// A request or an answer larger than a plugin connection takes fails alone,
// as a unary call's would: the shared stream, and the calls on it, go on.
func TestOversizedChatCallsFailAlone(t *testing.T) {
	impl := &sizedProvider{hold: make(chan struct{}), waiting: make(chan struct{})}
	p, _, counts := serveOver(t, &providerServer{impl: impl})
	held := make(chan error, 1)
	go func() {
		res, err := p.Chat(context.Background(), ChatRequest{Body: []byte("wait")})
		if err == nil && string(res.Body) != "wait" {
			err = fmt.Errorf("answered %q", res.Body)
		}
		held <- err
	}()
	<-impl.waiting // a call is in flight on the stream while the others fail

	_, err := p.Chat(context.Background(), ChatRequest{Body: make([]byte, maxMessage+1)})
	assert.ErrorContains(t, err, "larger than max", "a request too large fails, as a unary call")
	_, err = p.Chat(context.Background(), ChatRequest{Body: []byte("huge")})
	assert.ErrorContains(t, err, "larger than the", "an answer too large fails")

	large := bytes.Repeat([]byte("x"), 5<<20) // over gRPC's default of 4 MiB
	res, err := p.Chat(context.Background(), ChatRequest{Body: large})
	require.NoError(t, err, "a large request and answer within the limit pass")
	assert.Equal(t, large, res.Body)

	close(impl.hold)
	require.NoError(t, <-held, "the call in flight is answered")
	res, err = p.Chat(context.Background(), ChatRequest{Body: []byte("after")})
	require.NoError(t, err)
	assert.Equal(t, "after", string(res.Body))
	assert.Equal(t, 1, counts.get(pb.Provider_ChatCalls_FullMethodName), "on the same stream")
}

// gatedReader is a plugin whose ChatCalls stream stops reading after its
// first call until gate closes, and reports every message it reads.
type gatedReader struct {
	*providerServer
	gate chan struct{}
	seen chan *pb.ChatCall
}

func (g *gatedReader) ChatCalls(stream grpc.BidiStreamingServer[pb.ChatCall, pb.ChatResult]) error {
	return g.providerServer.ChatCalls(&gatedStream{BidiStreamingServer: stream, reader: g})
}

type gatedStream struct {
	grpc.BidiStreamingServer[pb.ChatCall, pb.ChatResult]
	reader *gatedReader
	read   int
}

func (s *gatedStream) Recv() (*pb.ChatCall, error) {
	if s.read == 1 {
		<-s.reader.gate
	}
	s.read++
	c, err := s.BidiStreamingServer.Recv()
	if err == nil {
		s.reader.seen <- c
	}
	return c, err
}

// stallSender has the plugin read the call "first" and then stop reading,
// with a call larger than the stream's window stuck in the sender.
func stallSender(t *testing.T, impl Provider) (Provider, *gatedReader) {
	t.Helper()
	plugin := &gatedReader{providerServer: &providerServer{impl: impl}, gate: make(chan struct{}), seen: make(chan *pb.ChatCall, 1024)}
	p, _, _ := serveOver(t, plugin)
	go func() { _, _ = p.Chat(t.Context(), ChatRequest{Body: []byte("first")}) }()
	require.Equal(t, "first", string((<-plugin.seen).GetRequest().GetBody()))
	jamSender(t, p)
	return p, plugin
}

// jamSender leaves p's sender stuck in gRPC's flow control, its plugin not
// reading: gRPC takes a call larger than the window whole, and the send
// after it waits for the window.
func jamSender(t *testing.T, p Provider) {
	t.Helper()
	go func() { _, _ = p.Chat(t.Context(), ChatRequest{Body: make([]byte, 2*streamWindow)}) }()
	calls := p.(*providerClient).calls
	require.Eventually(t, func() bool { return calls.sent.Load() == 2 }, 10*time.Second, time.Millisecond)
	go func() { _, _ = p.Chat(t.Context(), ChatRequest{Body: []byte("stuck")}) }()
	require.Eventually(t, func() bool { return calls.sent.Load() == 3 }, 10*time.Second, time.Millisecond)
}

// readUntil reads what the plugin read until the call with body last, and
// returns the bodies of the calls and the ids of the cancels before it.
func readUntil(t *testing.T, plugin *gatedReader, last string) (bodies []string, cancels []uint64) {
	t.Helper()
	for {
		select {
		case c := <-plugin.seen:
			if c.GetRequest() == nil {
				cancels = append(cancels, c.GetId())
				continue
			}
			body := string(c.GetRequest().GetBody())
			if body == last {
				return bodies, cancels
			}
			if len(body) < 100 {
				bodies = append(bodies, body)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("the plugin never read %q", last)
		}
	}
}

func TestAChatCallWithdrawnBeforeItIsSentNeverReachesThePlugin(t *testing.T) {
	p, plugin := stallSender(t, &echoProvider{})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := p.Chat(ctx, ChatRequest{Body: []byte("gone")})
	require.ErrorIs(t, err, context.DeadlineExceeded)

	close(plugin.gate)
	res, err := p.Chat(context.Background(), ChatRequest{Body: []byte("last")})
	require.NoError(t, err)
	assert.Equal(t, "last", string(res.Body))
	bodies, cancels := readUntil(t, plugin, "last")
	assert.Equal(t, []string{"stuck"}, bodies, "the call whose caller left was not sent")
	assert.Empty(t, cancels)
}

func TestACancelIsNotLostBehindAFullSendQueue(t *testing.T) {
	impl := &echoProvider{release: make(chan struct{}), ended: make(chan error, 1)}
	plugin := &gatedReader{providerServer: &providerServer{impl: impl}, gate: make(chan struct{}), seen: make(chan *pb.ChatCall, 1024)}
	p, _, _ := serveOver(t, plugin)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := p.Chat(ctx, ChatRequest{Body: []byte("first")})
		done <- err
	}()
	require.Equal(t, "first", string((<-plugin.seen).GetRequest().GetBody()))
	jamSender(t, p)
	calls := p.(*providerClient).calls
	// Fill the queue behind the stuck sender, and more.
	var fillers sync.WaitGroup
	for range sendQueue + 8 {
		fillers.Go(func() { _, _ = p.Chat(t.Context(), ChatRequest{Body: []byte("filler")}) })
	}
	require.Eventually(t, func() bool { return len(calls.open.queue) == sendQueue }, 10*time.Second, time.Millisecond)

	cancel() // the plugin runs "first": it must hear of this
	require.ErrorIs(t, <-done, context.Canceled)
	close(plugin.gate)
	select {
	case err := <-impl.ended:
		assert.ErrorIs(t, err, context.Canceled, "the plugin's call ends with the caller's")
	case <-time.After(10 * time.Second):
		t.Fatal("the cancel was lost: the plugin's call went on")
	}
	close(impl.release)
	fillers.Wait()
}

// A plugin connection still opening holds up no caller past its deadline,
// the first one included.
func TestChatCallsKeepTheirDeadlinesWhileTheStreamOpens(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = lis.Close() })
	go func() { // accepts, and never answers gRPC's handshake
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { _ = c.Close() })
		}
	}()
	p, _ := dialProvider(t, lis.Addr().String())

	done := make(chan error, 2)
	for range 2 {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			_, err := p.Chat(ctx, ChatRequest{Body: []byte("x")})
			done <- err
		}()
	}
	for range 2 {
		select {
		case err := <-done:
			assert.ErrorIs(t, err, context.DeadlineExceeded)
		case <-time.After(5 * time.Second):
			t.Fatal("a call waited for the connection past its deadline")
		}
	}
}

// A call cut by the host closing the plugin's connection (it killed the
// plugin, or is shutting down) is the plugin being unavailable, on the
// shared stream and as a unary call: not the client's cancellation, which
// svc records as the client gone.
func TestACallCutByTheConnectionClosingIsUnavailable(t *testing.T) {
	for name, srv := range map[string]func(Provider) pb.ProviderServer{
		"shared stream": func(impl Provider) pb.ProviderServer { return &providerServer{impl: impl} },
		"unary":         func(impl Provider) pb.ProviderServer { return &unaryOnly{impl: impl} },
	} {
		t.Run(name, func(t *testing.T) {
			impl := &echoProvider{release: make(chan struct{}), ended: make(chan error, 1), started: make(chan time.Time, 1)}
			s := grpc.NewServer(ServerOptions()...)
			pb.RegisterProviderServer(s, srv(impl))
			lis, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			go func() { _ = s.Serve(lis) }()
			t.Cleanup(s.Stop)
			p, conn := dialProvider(t, lis.Addr().String())

			done := make(chan error, 1)
			go func() {
				_, err := p.Chat(context.Background(), ChatRequest{Body: []byte("x")})
				done <- err
			}()
			<-impl.started
			require.NoError(t, conn.Close())
			err = <-done
			var unavailable *UnavailableError
			assert.ErrorAs(t, err, &unavailable, "%v", err)
			assert.NotErrorIs(t, err, context.Canceled)
		})
	}
}

// bigEmbedder answers every embeddings call with answer.
type bigEmbedder struct {
	echoProvider
	answer []byte
}

func (b *bigEmbedder) Embed(context.Context, EmbedRequest) (EmbedResponse, error) {
	return EmbedResponse{Body: b.answer}, nil
}

// An embeddings answer gets no more room than a chat answer: one larger
// than a plugin connection takes fails, and svc never holds it.
func TestOversizedEmbeddingsAnswerFails(t *testing.T) {
	impl := &bigEmbedder{answer: bytes.Repeat([]byte("0.012345678,"), (maxMessage+1<<20)/12)}
	p, _, _ := serveOver(t, &providerServer{impl: impl})
	_, err := p.(Embedder).Embed(context.Background(), EmbedRequest{Model: "e-1"})
	assert.ErrorContains(t, err, "larger than max")
}

// A plugin without the shared stream refuses an answer too large as the
// stream does: its server sends no more than svc receives.
func TestOversizedUnaryChatAnswerFails(t *testing.T) {
	p, _, _ := serveOver(t, &unaryOnly{impl: &sizedProvider{}})
	_, err := p.Chat(context.Background(), ChatRequest{Body: []byte("huge")})
	assert.ErrorContains(t, err, "larger than max")
}

// waitWorkers waits until w has live workers, idle of them idle.
func waitWorkers(t *testing.T, w *callWorkers, live, idle int32) {
	t.Helper()
	require.Eventually(t, func() bool { return w.live.Load() == live && w.idle.Load() == idle },
		10*time.Second, time.Millisecond, "live %d idle %d", w.live.Load(), w.idle.Load())
}

func TestCallWorkersRunTheNextCallOnAnIdleWorker(t *testing.T) {
	w := newCallWorkers(time.Hour) // none ends while the test counts them
	defer w.stop()
	done := make(chan struct{})
	call := func() {
		w.run(func() { done <- struct{}{} })
		<-done
		require.Eventually(t, func() bool { return w.idle.Load() == w.live.Load() }, 10*time.Second, time.Millisecond)
	}
	call()
	// A worker counts itself idle just before it waits: a call in between
	// starts another. Once one waits, the next call is its own.
	require.Eventually(t, func() bool {
		live := w.live.Load()
		call()
		return w.live.Load() == live
	}, 10*time.Second, time.Millisecond, "every call started a worker")
}

func TestCallWorkersNeverQueueACallBehindAnother(t *testing.T) {
	w := newCallWorkers(workerIdle)
	defer w.stop()
	release, done := make(chan struct{}), make(chan struct{})
	w.run(func() { <-release })
	w.run(func() { close(done) }) // the first worker is busy: a second one runs it
	<-done
	waitWorkers(t, w, 2, 1)
	close(release)
	waitWorkers(t, w, 2, 2)
}

func TestCallWorkersEndWhenIdleOrStopped(t *testing.T) {
	w := newCallWorkers(time.Millisecond)
	w.run(func() {})
	waitWorkers(t, w, 0, 0) // ended once idle for idleFor

	w = newCallWorkers(time.Hour)
	w.run(func() {})
	waitWorkers(t, w, 1, 1)
	w.stop()
	waitWorkers(t, w, 0, 0)
}
