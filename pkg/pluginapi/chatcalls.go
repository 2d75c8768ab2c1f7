package pluginapi

import (
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"time"

	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	pb "github.com/svc-gateway/svc/pkg/pluginapi/proto"
)

// chatCalls sends non-streamed chat calls over one ChatCalls stream per
// connection instead of a unary call each. A unary call opens an HTTP/2
// stream, and the plugin starts a handler for it and closes it with
// trailers; on the shared stream a call is one message each way. Between
// two processes on one machine that is most of what a call costs besides
// waking the other process.
type chatCalls struct {
	client pb.ProviderClient

	mu          sync.Mutex
	open        *callStream // nil: none yet, or the last one ended
	unsupported bool        // the plugin has no ChatCalls: unary calls
	nextID      uint64

	sent atomic.Uint64 // calls handed to gRPC, which tests wait on
}

// callStream is one ChatCalls stream and the calls waiting on it. Its
// sender opens it, so that no caller waits on gRPC while holding
// chatCalls.mu, and every caller keeps its own deadline.
type callStream struct {
	stream  grpc.BidiStreamingClient[pb.ChatCall, pb.ChatResult] // set by the sender before the reader starts
	ctx     context.Context                                      // ends with the stream
	cancel  context.CancelFunc
	queue   chan *queuedCall // to the stream's one sender
	pending map[uint64]chan callOutcome

	// Cancels of calls the plugin has been sent, for the sender to send
	// when it is next free. They are kept apart from the queue so that a
	// full queue loses none.
	cancelMu  sync.Mutex
	cancels   []uint64
	cancelled chan struct{} // holds a token while cancels has ids
}

// queuedCall is a call on its way to the sender, which sends it unless its
// caller withdrew it first: a call whose caller is gone never reaches the
// plugin.
type queuedCall struct {
	msg   *pb.ChatCall
	taken atomic.Bool // by the sender to send it, or by its caller to withdraw it
}

// sendQueue is how many calls may wait for the stream's sender.
const sendQueue = 256

// callOutcome is a call's answer from the plugin, or the reason the stream
// ended before it.
type callOutcome struct {
	result *pb.ChatResult
	err    error
}

// errUnary asks for the call as a unary Chat: the plugin does not serve
// ChatCalls, or the call is too large for the shared stream.
var errUnary = errors.New("a unary call, not the shared stream")

// do sends req on the shared stream and waits for its answer. It returns
// errUnary when the call must go as a unary Chat instead.
func (m *chatCalls) do(ctx context.Context, req *pb.ChatRequest) (*pb.ChatResponse, error) {
	call := &pb.ChatCall{Request: req}
	if deadline, ok := ctx.Deadline(); ok {
		call.TimeoutNs = max(int64(time.Until(deadline)), 1)
	}
	// A message larger than a plugin connection takes would end the shared
	// stream, and every call on it: a request that large goes as a unary
	// call instead, which fails alone.
	if proto.Size(call) > maxMessage-16 { // room for the id
		return nil, errUnary
	}
	s, id, ch, err := m.register()
	if err != nil {
		return nil, err
	}
	call.Id = id
	q := &queuedCall{msg: call}
	// io.EOF: the stream ended, and its reader answers every pending call,
	// this one included, with the reason.
	if err := s.send(ctx, q); err != nil && !errors.Is(err, io.EOF) {
		m.forget(s, id)
		return nil, err
	}
	select {
	case out := <-ch:
		if out.err != nil {
			return nil, out.err
		}
		return outcomeOf(ctx, out.result)
	case <-ctx.Done():
		if m.forget(s, id) && !q.taken.CompareAndSwap(false, true) {
			s.cancelCall(id) // the plugin has it: cancel it there
		}
		return nil, ctx.Err()
	}
}

// register numbers a call and files it on the open stream, starting one
// when there is none.
func (m *chatCalls) register() (*callStream, uint64, chan callOutcome, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.unsupported {
		return nil, 0, nil, errUnary
	}
	if m.open == nil {
		ctx, cancel := context.WithCancel(context.Background())
		m.open = &callStream{ctx: ctx, cancel: cancel, queue: make(chan *queuedCall, sendQueue),
			pending: make(map[uint64]chan callOutcome), cancelled: make(chan struct{}, 1)}
		go m.run(m.open)
	}
	m.nextID++
	ch := make(chan callOutcome, 1)
	m.open.pending[m.nextID] = ch
	return m.open, m.nextID, ch, nil
}

// forget takes a call off its stream; false means its answer came first
// (or the stream ended).
func (m *chatCalls) forget(s *callStream, id uint64) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := s.pending[id]
	delete(s.pending, id)
	return ok
}

// run opens s and is its one sender (gRPC allows no more) until it ends.
// A stream that fails to open, or a failed send, ends it, and the calls
// pending are answered with the reason.
func (m *chatCalls) run(s *callStream) {
	stream, err := m.client.ChatCalls(s.ctx)
	if err != nil {
		m.end(s, err)
		return
	}
	s.stream = stream
	go m.read(s)
	for {
		select {
		case <-s.cancelled:
			for _, id := range s.takeCancels() {
				if err := s.stream.Send(&pb.ChatCall{Id: id}); err != nil {
					s.cancel()
					return
				}
			}
		case q := <-s.queue:
			if !q.taken.CompareAndSwap(false, true) {
				continue // its caller is gone
			}
			m.sent.Add(1)
			if err := s.stream.Send(q.msg); err != nil {
				s.cancel()
				return
			}
		case <-s.ctx.Done():
			return
		}
	}
}

// read hands each answer to its caller until the stream ends, then answers
// every call still waiting with the reason it ended.
func (m *chatCalls) read(s *callStream) {
	for {
		res, err := s.stream.Recv()
		if err != nil {
			m.end(s, err)
			return
		}
		m.mu.Lock()
		ch := s.pending[res.GetId()]
		delete(s.pending, res.GetId())
		m.mu.Unlock()
		if ch != nil {
			ch <- callOutcome{result: res}
		}
	}
}

// end retires a stream that ended, or failed to open, with err: callers
// still sending get io.EOF, and every call pending gets the reason.
func (m *chatCalls) end(s *callStream, err error) {
	var out callOutcome
	switch {
	case status.Code(err) == codes.Unimplemented:
		// The plugin never saw the calls: they go as unary calls.
		out.err = errUnary
	case errors.Is(err, io.EOF):
		// The plugin ended the stream: it is going away.
		out.err = &UnavailableError{Err: errors.New("plugin closed its call stream")}
	case s.ctx.Err() != nil:
		// The sender could not send and ended the stream.
		out.err = &UnavailableError{Err: err}
	default:
		out.err = fromStatus(s.ctx, err)
	}
	s.cancel()
	m.mu.Lock()
	if m.open == s {
		m.open = nil
	}
	if out.err == errUnary {
		m.unsupported = true
	}
	pending := s.pending
	s.pending = nil
	m.mu.Unlock()
	for _, ch := range pending {
		ch <- out
	}
}

// send hands q to the stream's sender. A plugin that stops reading stalls
// the sender in gRPC's flow control, which no call's deadline interrupts;
// the callers wait on the queue instead, and keep their deadlines. io.EOF
// means the stream ended, and its reader answers the call.
func (s *callStream) send(ctx context.Context, q *queuedCall) error {
	select {
	case s.queue <- q:
		return nil
	case <-s.ctx.Done():
		return io.EOF
	case <-ctx.Done():
		return ctx.Err()
	}
}

// cancelCall has the sender cancel call id in the plugin.
func (s *callStream) cancelCall(id uint64) {
	s.cancelMu.Lock()
	s.cancels = append(s.cancels, id)
	s.cancelMu.Unlock()
	select {
	case s.cancelled <- struct{}{}:
	default: // a token is there already
	}
}

// takeCancels returns the cancels to send, and forgets them.
func (s *callStream) takeCancels() []uint64 {
	s.cancelMu.Lock()
	defer s.cancelMu.Unlock()
	ids := s.cancels
	s.cancels = nil
	return ids
}

// outcomeOf reads the ChatResult of a call made with ctx: its response, or
// its status as the error a unary Chat would have returned.
func outcomeOf(ctx context.Context, r *pb.ChatResult) (*pb.ChatResponse, error) {
	if len(r.GetStatus()) == 0 {
		return r.GetResponse(), nil
	}
	var st spb.Status
	if err := proto.Unmarshal(r.GetStatus(), &st); err != nil {
		return nil, errors.New("plugin sent an unreadable status: " + err.Error())
	}
	return nil, fromStatus(ctx, status.FromProto(&st).Err())
}

// ChatCalls is the plugin's side of the shared stream: each call runs in
// its own goroutine, as Chat, and answers on the stream when done; a call
// without a request cancels the running call of its id. When svc closes
// the stream the calls still running finish and answer; when the stream
// breaks they are cancelled.
func (s *providerServer) ChatCalls(stream grpc.BidiStreamingServer[pb.ChatCall, pb.ChatResult]) error {
	ctx, cancelAll := context.WithCancel(stream.Context())
	defer cancelAll()
	workers := newCallWorkers(workerIdle)
	defer workers.stop()
	var (
		wg      sync.WaitGroup
		sendMu  sync.Mutex
		mu      sync.Mutex
		running = make(map[uint64]context.CancelFunc)
	)
	for {
		call, err := stream.Recv()
		if errors.Is(err, io.EOF) { // svc is done sending: answer what runs
			wg.Wait()
			return nil
		}
		if err != nil {
			cancelAll()
			wg.Wait()
			return err
		}
		id := call.GetId()
		if call.GetRequest() == nil {
			mu.Lock()
			if cancel := running[id]; cancel != nil {
				cancel()
			}
			mu.Unlock()
			continue
		}
		callCtx, cancel := callContext(ctx, call.GetTimeoutNs())
		mu.Lock()
		running[id] = cancel
		mu.Unlock()
		wg.Add(1)
		workers.run(func() {
			defer wg.Done()
			res, err := s.Chat(callCtx, call.GetRequest())
			mu.Lock()
			delete(running, id)
			mu.Unlock()
			cancel()
			out := &pb.ChatResult{Id: id, Response: res}
			if err == nil && proto.Size(out) > maxMessage { // the error a unary call would get
				err = status.Errorf(codes.ResourceExhausted, "the answer (%d bytes) is larger than the %d bytes svc accepts", proto.Size(out), maxMessage)
			}
			if err != nil {
				out.Response = nil
				out.Status, _ = proto.Marshal(status.Convert(err).Proto())
			}
			sendMu.Lock()
			_ = stream.Send(out) // fails only when the stream broke, which Recv reports
			sendMu.Unlock()
		})
	}
}

// callContext is a call's context in the plugin: cancellable, with the
// caller's deadline when it had one.
func callContext(parent context.Context, timeoutNs int64) (context.Context, context.CancelFunc) {
	if timeoutNs > 0 {
		return context.WithTimeout(parent, time.Duration(timeoutNs))
	}
	return context.WithCancel(parent)
}

// callWorkers run a ChatCalls stream's calls on goroutines kept between
// calls. A call's goroutine grows its stack to what an upstream call needs
// (an HTTP round trip, a JSON decode); a goroutine started for each call
// starts small and copies its stack as it grows, every call, where a kept
// one has grown it once. A worker idle for idleFor ends.
type callWorkers struct {
	calls   chan func() // to an idle worker
	done    chan struct{}
	idleFor time.Duration

	live, idle atomic.Int32 // workers, and those waiting for a call, which tests wait on
}

// workerIdle is how long a worker waits for its next call before it ends:
// long enough to carry a steady rate of calls, short enough that a burst
// does not leave its goroutines waiting long.
const workerIdle = 2 * time.Second

func newCallWorkers(idleFor time.Duration) *callWorkers {
	return &callWorkers{calls: make(chan func()), done: make(chan struct{}), idleFor: idleFor}
}

// run runs fn on an idle worker, or on a new one when none is idle: a call
// never waits for another to end.
func (w *callWorkers) run(fn func()) {
	select {
	case w.calls <- fn:
	default:
		w.live.Add(1)
		go w.work(fn)
	}
}

func (w *callWorkers) work(fn func()) {
	defer w.live.Add(-1)
	idle := time.NewTimer(w.idleFor)
	defer idle.Stop()
	for {
		fn()
		idle.Reset(w.idleFor)
		w.idle.Add(1)
		select {
		case fn = <-w.calls:
			w.idle.Add(-1)
		case <-idle.C:
			w.idle.Add(-1)
			return
		case <-w.done:
			w.idle.Add(-1)
			return
		}
	}
}

// stop ends the idle workers; those running a call end after it.
func (w *callWorkers) stop() { close(w.done) }
