package providers

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/pricing"
	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// fakeOpener opens fakeInstances and remembers them by name.
type fakeOpener struct {
	mu     sync.Mutex
	opened map[string][]*fakeInstance
	fail   string // the name whose opening fails
}

func (o *fakeOpener) Open(_ context.Context, name, plugin, mode string, cfg pluginapi.ProviderConfig) (Instance, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if name == o.fail {
		return nil, errors.New("start plugin svc-provider-" + plugin + ": exec format error")
	}
	if o.opened == nil {
		o.opened = map[string][]*fakeInstance{}
	}
	i := &fakeInstance{name: name, cfg: cfg, release: make(chan struct{}), entered: make(chan struct{}, 1), pin: make(chan struct{})}
	o.opened[name] = append(o.opened[name], i)
	return i, nil
}

func (o *fakeOpener) last(name string) *fakeInstance {
	o.mu.Lock()
	defer o.mu.Unlock()
	l := o.opened[name]
	return l[len(l)-1]
}

func (o *fakeOpener) count(name string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.opened[name])
}

// fakeInstance answers chat calls; a call with Model "hold" waits for
// release, then fails when failHeld says so; one with Model "pin" waits
// for pin to close. Each tells entered when it is in flight.
type fakeInstance struct {
	name     string
	cfg      pluginapi.ProviderConfig
	release  chan struct{}
	entered  chan struct{}
	pin      chan struct{}
	failHeld bool
	mu       sync.Mutex
	closed   bool
}

func (i *fakeInstance) Chat(_ context.Context, req pluginapi.ChatRequest) (pluginapi.ChatResponse, error) {
	if req.Model == "pin" {
		i.entered <- struct{}{}
		<-i.pin
	}
	if req.Model == "hold" {
		i.entered <- struct{}{}
		<-i.release
		if i.failHeld {
			return pluginapi.ChatResponse{}, &pluginapi.ProviderError{Status: 503, Type: "upstream_error", Message: "down"}
		}
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.closed {
		return pluginapi.ChatResponse{}, errors.New("called after close")
	}
	return pluginapi.ChatResponse{Body: []byte(i.name)}, nil
}

func (i *fakeInstance) StreamChat(context.Context, pluginapi.ChatRequest, func(pluginapi.ChatChunk) error) error {
	return nil
}

func (i *fakeInstance) Models(context.Context) ([]pluginapi.Model, error) { return nil, nil }

func (i *fakeInstance) Close() {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.closed = true
}

func (i *fakeInstance) isClosed() bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.closed
}

// managed writes doc to a providers file and loads it.
func managed(t *testing.T, doc string) (*Manager, *fakeOpener, func(string)) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "providers.yaml")
	write := func(doc string) { require.NoError(t, os.WriteFile(path, []byte(doc), 0o600)) }
	write(doc)
	opener := &fakeOpener{}
	m, err := Load(context.Background(), ManagerOptions{Path: path, Opener: opener, Env: testEnv})
	require.NoError(t, err)
	t.Cleanup(m.Close)
	return m, opener, write
}

const twoMocks = "providers:\n  - name: a\n    plugin: mock\n  - name: b\n    plugin: mock\n    api_key_env: OPENAI_KEY\n"

func TestLoadOpensEachInstance(t *testing.T) {
	m, opener, _ := managed(t, twoMocks)
	set := m.Router().Current()
	require.Len(t, set.Providers, 2)
	assert.Equal(t, "sk-env-secret", opener.last("b").cfg.APIKey, "each instance is told its key")
	assert.Equal(t, 60*time.Second, opener.last("b").cfg.Timeout)
	res, err := set.Providers[1].Impl.Chat(context.Background(), pluginapi.ChatRequest{})
	require.NoError(t, err)
	assert.Equal(t, "b", string(res.Body))
	assert.Equal(t, []string{"sk-env-secret"}, m.Router().Secrets())
	st := m.Router().Status()
	assert.True(t, st.OK)
	assert.Equal(t, []string{"a", "b"}, Names(set))
	assert.Equal(t, "mock", Plugins(set))
}

func TestLoadRefusesABadFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "providers.yaml")
	require.NoError(t, os.WriteFile(path, []byte("providers:\n  - name: a\n    plugin: nope\n"), 0o600))
	_, err := Load(context.Background(), ManagerOptions{Path: path, Opener: &fakeOpener{}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `providers.yaml: providers[0] (name "a"): plugin:`)

	_, err = Load(context.Background(), ManagerOptions{Path: filepath.Join(t.TempDir(), "missing.yaml"), Opener: &fakeOpener{}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "missing.yaml: cannot be read")
}

func TestLoadClosesWhatItOpenedWhenAnInstanceFails(t *testing.T) {
	path := filepath.Join(t.TempDir(), "providers.yaml")
	require.NoError(t, os.WriteFile(path, []byte(twoMocks), 0o600))
	opener := &fakeOpener{fail: "b"}
	_, err := Load(context.Background(), ManagerOptions{Path: path, Opener: opener, Env: testEnv})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `providers.yaml: providers[1] (name "b"): start plugin svc-provider-mock`)
	assert.True(t, opener.last("a").isClosed(), "the instance opened before is closed")
}

// checkingOpener is a fakeOpener that can tell a plugin it cannot open
// before it is asked to.
type checkingOpener struct {
	fakeOpener
	missing string // the plugin it has no binary of
	checked []string
}

func (o *checkingOpener) CheckPlugin(plugin, mode string) error {
	o.checked = append(o.checked, plugin+" "+mode)
	if plugin == o.missing {
		return errors.New("plugin binary svc-provider-" + plugin + " not found")
	}
	return nil
}

// A missing plugin binary is listed with the file's other problems, and
// nothing is opened; a plugin whose name is already wrong is not asked
// about.
func TestLoadListsAMissingPluginWithTheOtherProblems(t *testing.T) {
	path := filepath.Join(t.TempDir(), "providers.yaml")
	doc := "providers:\n  - name: a\n    plugin: anthropic\n  - name: b\n    plugin: mock\n    api_key_env: UNSET_KEY\n" +
		"  - name: c\n    plugin: nope\n  - name: d\n    plugin: openai\n    mode: in_process\n"
	require.NoError(t, os.WriteFile(path, []byte(doc), 0o600))
	opener := &checkingOpener{missing: "anthropic"}
	_, err := Load(context.Background(), ManagerOptions{Path: path, Opener: opener, Env: testEnv})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `providers.yaml: providers[0] (name "a"): plugin: plugin binary svc-provider-anthropic not found`)
	assert.Contains(t, err.Error(), `providers.yaml: providers[1] (name "b"): api_key_env:`)
	assert.Contains(t, err.Error(), `providers.yaml: providers[2] (name "c"): plugin: must be`)
	assert.Equal(t, []string{"anthropic plugin", "mock plugin", "openai in_process"}, opener.checked)
	assert.Zero(t, opener.count("a")+opener.count("b")+opener.count("d"), "nothing opened")
}

func TestReloadKeepsUnchangedInstances(t *testing.T) {
	m, opener, write := managed(t, twoMocks)
	before := m.Router().Current()
	write(twoMocks + "    weight: 2\n  - name: c\n    plugin: mock\n")
	require.NoError(t, m.Reload(context.Background()))
	after := m.Router().Current()
	require.Len(t, after.Providers, 3)
	assert.Same(t, before.Providers[0].Impl, after.Providers[0].Impl, "a unchanged: same instance, same process")
	assert.NotSame(t, before.Providers[1].Impl, after.Providers[1].Impl, "b changed: a new instance")
	assert.Equal(t, 1, opener.count("a"))
	assert.Equal(t, 2, opener.count("b"))
	assert.Equal(t, 1, opener.count("c"))
	assert.True(t, opener.opened["b"][0].isClosed(), "the old b is closed, no call being in flight on it")
	assert.False(t, opener.last("a").isClosed())
}

func TestReloadClosesARemovedInstanceAfterItsCallInFlight(t *testing.T) {
	m, opener, write := managed(t, twoMocks)
	old := m.Router().Current()
	b := opener.last("b")
	done := make(chan error, 1)
	go func() {
		_, err := old.Providers[1].Impl.Chat(context.Background(), pluginapi.ChatRequest{Model: "hold"})
		done <- err
	}()
	<-b.entered // the call is in flight
	write("providers:\n  - name: a\n    plugin: mock\n")
	require.NoError(t, m.Reload(context.Background()))
	assert.Len(t, m.Router().Current().Providers, 1)
	assert.False(t, b.isClosed(), "closed under a call in flight")

	close(b.release)
	require.NoError(t, <-done, "the call in flight finished on its instance")
	<-old.Providers[1].Impl.(*counted).done
	assert.True(t, b.isClosed(), "closed once its last call ended")

	_, err := old.Providers[1].Impl.Chat(context.Background(), pluginapi.ChatRequest{})
	var unavailable *pluginapi.UnavailableError
	require.ErrorAs(t, err, &unavailable, "a late call on the closed instance is refused as unavailable")
	assert.Contains(t, err.Error(), "closed by a reload")
}

func TestABadReloadKeepsTheLastSet(t *testing.T) {
	m, opener, write := managed(t, twoMocks)
	before := m.Router().Current()
	write("providers:\n  - name: a\n    plugin: mock\n    timeout: soon\n")
	err := m.Reload(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), `providers.yaml: providers[0] (name "a"): timeout:`)
	assert.Same(t, before, m.Router().Current(), "the last good set serves")
	st := m.Router().Status()
	assert.False(t, st.OK)
	assert.Equal(t, err.Error(), st.Error)
	assert.Len(t, st.Providers, 2)
	assert.False(t, opener.last("a").isClosed())

	opener.fail = "c"
	write(twoMocks + "  - name: c\n    plugin: mock\n")
	require.Error(t, m.Reload(context.Background()))
	assert.Same(t, before, m.Router().Current(), "an instance that does not open fails the reload")

	write(twoMocks)
	require.NoError(t, m.Reload(context.Background()))
	assert.True(t, m.Router().Status().OK, "a good reload clears the error")
	assert.Equal(t, 1, opener.count("a"))
}

func TestStatusNeverShowsAKey(t *testing.T) {
	m, _, _ := managed(t, twoMocks)
	st := m.Router().Status()
	assert.NotContains(t, strings.ToLower(jsonOf(t, st)), "sk-env-secret")
}

// BenchmarkCountedChat is the reference count's cost on every call to an
// instance of a providers file, beside the instance called directly.
func BenchmarkCountedChat(b *testing.B) {
	inst := &fakeInstance{name: "a"}
	ctx, req := context.Background(), pluginapi.ChatRequest{}
	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = inst.Chat(ctx, req)
		}
	})
	c := &counted{inst: inst, done: make(chan struct{})}
	b.Run("counted", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = c.Chat(ctx, req)
		}
	})
	b.Run("counted-parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				_, _ = c.Chat(ctx, req)
			}
		})
	})
}

// Calls racing a retire never reach a closed instance: each either runs
// on the open instance or is refused as unavailable, and the instance is
// closed once, after the last.
func TestRetireRacingCalls(t *testing.T) {
	for range 50 {
		inst := &fakeInstance{name: "a"}
		c := &counted{inst: inst, done: make(chan struct{})}
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for range 20 {
					_, err := c.Chat(context.Background(), pluginapi.ChatRequest{})
					if err != nil {
						var unavailable *pluginapi.UnavailableError
						require.ErrorAs(t, err, &unavailable, "a call reached the closed instance")
					}
				}
			})
		}
		c.retire()
		wg.Wait()
		<-c.done
		assert.True(t, inst.isClosed())
	}
}

func TestACallPlannedBeforeAReloadUsesTheNewInstance(t *testing.T) {
	m, _, write := managed(t, "retries: {max_attempts: 3, backoff: 1ms}\nproviders:\n  - name: a\n    plugin: mock\n")
	p, err := m.Router().Plan("m") // planned; then the policies, the cache...
	require.NoError(t, err)
	write("retries: {max_attempts: 3, backoff: 1ms}\nproviders:\n  - name: a\n    plugin: mock\n    timeout: 5s\n")
	require.NoError(t, m.Reload(context.Background()))
	res, err := m.Router().Chat(context.Background(), p, pluginapi.ChatRequest{Body: []byte(`{}`), Model: "m"})
	require.NoError(t, err, "the call is answered by the instance that replaced its plan's")
	assert.Equal(t, "a", string(res.Body))
	assert.Equal(t, []string{"a:ok"}, outcomes(p), "the closed instance is no attempt")
	assert.Equal(t, "a", p.Answered)
}

// A call's attempt after a reload goes to the instance as the reload
// configured it, its first one having failed on the one it replaced, even
// while another call keeps that one open.
func TestARetryAfterAReloadGoesToTheNewInstance(t *testing.T) {
	m, opener, write := managed(t, "retries: {max_attempts: 3, backoff: 1ms}\nproviders:\n  - name: a\n    plugin: mock\n")
	old := opener.last("a")
	old.failHeld = true
	call := func(model string, done chan<- error) {
		p, err := m.Router().Plan(model)
		if err == nil {
			_, err = m.Router().Chat(context.Background(), p, pluginapi.ChatRequest{Body: []byte(`{}`), Model: model})
		}
		done <- err
	}
	pinned, held := make(chan error, 1), make(chan error, 1)
	go call("pin", pinned) // keeps the old instance open
	<-old.entered
	go call("hold", held)
	<-old.entered
	write("retries: {max_attempts: 3, backoff: 1ms}\nproviders:\n  - name: a\n    plugin: mock\n    timeout: 5s\n")
	require.NoError(t, m.Reload(context.Background()))
	fresh := opener.last("a")
	require.NotSame(t, old, fresh)
	close(old.release) // the held call's first attempt fails
	select {
	case <-fresh.entered:
	case <-old.entered:
		t.Fatal("the retry went to the instance the reload replaced")
	}
	close(fresh.release)
	require.NoError(t, <-held)
	assert.Equal(t, 5*time.Second, fresh.cfg.Timeout, "the retry went to a as now configured")
	close(old.pin)
	require.NoError(t, <-pinned)
}

// After a reload, a planned candidate whose instance now serves other
// models is skipped, and the call is priced by the instance last tried, as
// the reload configured it.
func TestARetryAfterAReloadKeepsToWhatWasPlanned(t *testing.T) {
	const retries = "retries: {max_attempts: 3, backoff: 1ms}\n"
	m, opener, write := managed(t, retries+twoMocks)
	old := opener.last("a")
	old.failHeld = true
	plan := make(chan *Plan, 1)
	held, pinned := make(chan error, 1), make(chan error, 1)
	go func() {
		p, _ := m.Router().Plan("pin")
		_, err := m.Router().Chat(context.Background(), p, pluginapi.ChatRequest{Body: []byte(`{}`), Model: "pin"})
		pinned <- err
	}()
	<-old.entered // a stays open under this call
	go func() {
		p, _ := m.Router().Plan("hold")
		_, err := m.Router().Chat(context.Background(), p, pluginapi.ChatRequest{Body: []byte(`{}`), Model: "hold"})
		plan <- p
		held <- err
	}()
	<-old.entered
	write(retries + "providers:\n  - name: a\n    plugin: mock\n    models: [other]\n" +
		"  - name: b\n    plugin: mock\n    api_key_env: OPENAI_KEY\n    prices: {hold: {input: 1000000, output: 0}}\n")
	require.NoError(t, m.Reload(context.Background()))
	b := opener.last("b")
	b.failHeld = true
	// The a the reload made would answer: a call that went to it fails the
	// test at once rather than hang.
	close(opener.last("a").release)
	close(old.release) // the first attempt fails on the a planned
	<-b.entered
	close(b.release) // and the second on the b the reload made
	p := <-plan
	var exhausted *ExhaustedError
	require.ErrorAs(t, <-held, &exhausted)
	assert.Equal(t, []string{"a:error", "b:error", "b:error"}, outcomes(p))
	assert.Equal(t, []Skipped{{Provider: "a", Reason: ReasonChanged}}, p.Skipped, "a serves other models now")
	usd, known := m.Router().Cost(p, pricing.Tokens{Prompt: 3})
	assert.True(t, known)
	assert.InDelta(t, 3.0, usd, 1e-9, "priced as the b the reload configured")
	close(old.pin)
	require.NoError(t, <-pinned)
}

func TestACallPlannedBeforeAReloadSkipsARemovedInstance(t *testing.T) {
	m, _, write := managed(t, "retries: {max_attempts: 3, backoff: 1ms}\n"+twoMocks)
	p, err := m.Router().Plan("m")
	require.NoError(t, err)
	write("retries: {max_attempts: 3, backoff: 1ms}\nproviders:\n  - name: b\n    plugin: mock\n    api_key_env: OPENAI_KEY\n")
	require.NoError(t, m.Reload(context.Background()))
	_, err = m.Router().Chat(context.Background(), p, pluginapi.ChatRequest{Body: []byte(`{}`), Model: "m"})
	require.NoError(t, err)
	assert.Equal(t, []string{"b:ok"}, outcomes(p))
	assert.Equal(t, []Skipped{{Provider: "a", Reason: ReasonRemoved}}, p.Skipped)
}
