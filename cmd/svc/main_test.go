package main_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/testbin"
)

func TestMain(m *testing.M) { os.Exit(testbin.Main(m)) }

const bootstrap = "e2e-bootstrap-token-0123456789"

// proc is a running svc process.
type proc struct {
	cmd  *exec.Cmd
	addr string
	db   string
	logs chan map[string]any
	done chan error

	mu     sync.Mutex
	stderr []string // every line svc wrote to stderr, kept whole
}

// stderrLines returns every line svc has written to stderr so far.
func (p *proc) stderrLines() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.stderr)
}

// start runs svc with a temp database on a free port and waits for its
// "listening" line.
func start(t *testing.T, env ...string) *proc {
	return startWithDB(t, filepath.Join(t.TempDir(), "svc.db"), env...)
}

// startWithDB runs svc on the database file db, with the plugins built for
// the tests.
func startWithDB(t *testing.T, db string, env ...string) *proc {
	t.Helper()
	cmd := exec.Command(testbin.SVC(t))
	cmd.Env = append([]string{
		"PATH=" + os.Getenv("PATH"), "SVC_ADDR=127.0.0.1:0", "SVC_LOG_JSON=1",
		"SVC_DB=" + db, "SVC_PLUGIN_DIR=" + testbin.PluginDir(t),
	}, env...)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	p := &proc{cmd: cmd, db: db, logs: make(chan map[string]any, 1000), done: make(chan error, 1)}
	var plain strings.Builder // what svc printed that is not a log line
	exited := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.mu.Lock()
			p.stderr = append(p.stderr, sc.Text())
			p.mu.Unlock()
			var line map[string]any
			if json.Unmarshal(sc.Bytes(), &line) != nil {
				plain.WriteString(sc.Text() + "\n")
				continue
			}
			select {
			case p.logs <- line:
			default:
			}
		}
		close(p.logs)
		err := cmd.Wait()
		close(exited)
		p.done <- err
	}()
	// When the test ends, stop svc as an operator would: on SIGTERM it asks
	// its plugins to stop, and they clean up after themselves.
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
		}
	})
	for line := range p.logs {
		if line["@message"] == "listening" {
			p.addr = line["addr"].(string)
			return p
		}
	}
	t.Fatalf("svc exited before listening:\n%s", plain.String())
	return nil
}

func (p *proc) call(t *testing.T, method, path, token, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+p.addr+path, strings.NewReader(body))
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(res.Body).Decode(&out)
	return res.StatusCode, out
}

func (p *proc) waitExit(t *testing.T) error {
	t.Helper()
	select {
	case err := <-p.done:
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("svc did not exit within 30s")
		return nil
	}
}

func TestServeKeyLifecycleAndStop(t *testing.T) {
	p := start(t, "SVC_API_KEY="+bootstrap)

	status, health := p.call(t, "GET", "/health", "", "")
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, true, health["ok"])
	assert.Equal(t, "mock", health["provider"])
	assert.NotEmpty(t, health["version"])

	status, _ = p.call(t, "GET", "/api/v1/keys", "", "")
	assert.Equal(t, http.StatusUnauthorized, status)

	status, created := p.call(t, "POST", "/api/v1/keys", bootstrap, `{"name":"e2e","mode":"optimize","admin":true}`)
	require.Equal(t, http.StatusCreated, status)
	token := created["token"].(string)

	status, _ = p.call(t, "GET", "/api/v1/keys", token, "")
	assert.Equal(t, http.StatusOK, status, "the new admin key works")

	status, listing := p.call(t, "GET", "/api/v1/jobs", token, "")
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, []any{}, listing["jobs"])
	assert.Equal(t, map[string]any{"queued": 0.0, "running": 0.0, "succeeded": 0.0, "failed": 0.0}, listing["stats"])

	status, _ = p.call(t, "POST", "/api/v1/keys/"+created["id"].(string)+"/revoke", bootstrap, "")
	require.Equal(t, http.StatusOK, status)
	status, _ = p.call(t, "GET", "/api/v1/keys", token, "")
	assert.Equal(t, http.StatusUnauthorized, status, "revoked on its very next request")

	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	assert.NoError(t, p.waitExit(t), "SIGTERM is a clean exit")
}

// A request in flight when SIGTERM arrives is finished; new connections are
// refused meanwhile.
func TestSIGTERMFinishesInFlightRequests(t *testing.T) {
	p := start(t, "SVC_API_KEY="+bootstrap)
	body := `{"name":"in-flight","mode":"observe"}`
	conn, err := net.Dial("tcp", p.addr)
	require.NoError(t, err)
	defer conn.Close()
	// With Expect: 100-continue the server says "100 Continue" when the
	// handler starts reading the body: from then on the request is in flight.
	_, err = fmt.Fprintf(conn, "POST /api/v1/keys HTTP/1.1\r\nHost: svc\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/json\r\nContent-Length: %d\r\nExpect: 100-continue\r\n\r\n", bootstrap, len(body))
	require.NoError(t, err)
	rd := bufio.NewReader(conn)
	interim, err := http.ReadResponse(rd, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusContinue, interim.StatusCode)

	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	require.Eventually(t, func() bool {
		c, err := net.DialTimeout("tcp", p.addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err != nil
	}, 10*time.Second, 20*time.Millisecond, "the listener closes on SIGTERM")

	_, err = io.WriteString(conn, body)
	require.NoError(t, err)
	res, err := http.ReadResponse(rd, nil)
	require.NoError(t, err)
	defer res.Body.Close()
	assert.Equal(t, http.StatusCreated, res.StatusCode)
	assert.NoError(t, p.waitExit(t))
}

func TestBadConfigurationStopsTheStart(t *testing.T) {
	cmd := exec.Command(testbin.SVC(t))
	cmd.Env = []string{"SVC_CACHE_TTL=forever", "SVC_DB=" + filepath.Join(t.TempDir(), "svc.db")}
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	assert.Equal(t, 1, exit.ExitCode())
	assert.Contains(t, string(out), "SVC_CACHE_TTL")
}
