package httpapi_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rawAnswer is an answer read off a raw connection.
type rawAnswer struct {
	status int
	body   map[string]any
}

// sendRaw writes a request exactly as given to addr, closes the sending
// half of the connection unless keepOpen, and reads the answer. It is how a
// client that sends less than it declared looks to the server.
func sendRaw(t *testing.T, addr, request string, keepOpen bool) rawAnswer {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	// A safety net for a server that never answers, not a wait.
	require.NoError(t, conn.SetDeadline(time.Now().Add(30*time.Second)))
	_, err = io.WriteString(conn, request)
	require.NoError(t, err)
	if !keepOpen {
		require.NoError(t, conn.(*net.TCPConn).CloseWrite())
	}
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err, "the server answers")
	defer res.Body.Close()
	var body map[string]any
	require.NoError(t, json.NewDecoder(res.Body).Decode(&body))
	return rawAnswer{status: res.StatusCode, body: body}
}

func (a rawAnswer) errorField(name string) any {
	e, _ := a.body["error"].(map[string]any)
	return e[name]
}

// bodyRoutes are routes that read a JSON body, one of each way in: the
// gateway, a management write, the trace API, a web session, settings.
var bodyRoutes = []struct{ method, path, body string }{
	{"POST", "/v1/chat/completions", triage},
	{"POST", "/api/v1/keys", `{"name":"k","mode":"observe"}`},
	{"POST", "/api/v1/trace", `{"runId":"run_x","type":"note","payload":{"a":1}}`},
	{"POST", "/api/v1/web/sessions", `{"url":"http://example.com/"}`},
	{"PUT", "/api/v1/settings", `{"key":"redaction","value":true}`},
}

func head(method, path string, headers ...string) string {
	return method + " " + path + " HTTP/1.1\r\nHost: svc.test\r\nAuthorization: Bearer " + bootstrap +
		"\r\nContent-Type: application/json\r\n" + strings.Join(headers, "\r\n") + "\r\n\r\n"
}

// A body that stops short of what the request declared is the client's
// fault, on every route: 400 with the reason, never 500.
func TestCutBodiesAre400(t *testing.T) {
	ts := newServer(t, bootstrap, nil)
	addr := ts.Listener.Addr().String()
	for _, rt := range bodyRoutes {
		half := rt.body[:len(rt.body)/2]
		chunk := strconv.FormatInt(int64(len(rt.body)), 16) + "\r\n"
		for name, request := range map[string]string{
			"short of its Content-Length": head(rt.method, rt.path, "Content-Length: "+strconv.Itoa(len(rt.body))) + half,
			"chunked, cut mid-chunk":      head(rt.method, rt.path, "Transfer-Encoding: chunked") + chunk + half,
			"chunked, no last chunk":      head(rt.method, rt.path, "Transfer-Encoding: chunked") + chunk + rt.body + "\r\n",
			"chunked, a bad chunk size":   head(rt.method, rt.path, "Transfer-Encoding: chunked") + "zz\r\n" + rt.body + "\r\n0\r\n\r\n",
		} {
			a := sendRaw(t, addr, request, false)
			assert.Equal(t, http.StatusBadRequest, a.status, "%s %s, %s: %v", rt.method, rt.path, name, a.body)
			assert.Equal(t, "body_incomplete", a.errorField("code"), "%s, %s", rt.path, name)
			assert.Contains(t, a.errorField("message"), "request body", "%s, %s", rt.path, name)
			if strings.HasPrefix(rt.path, "/v1/") {
				assert.Equal(t, "invalid_request_error", a.errorField("type"), "the provider's shape")
			}
		}
	}
}

// A body that does not arrive before the server's read deadline is 408,
// a timeout the client may retry, not a failure of svc.
func TestSlowBodiesAre408(t *testing.T) {
	ts := newServer(t, bootstrap, nil)
	slow := httptest.NewUnstartedServer(ts.Config.Handler)
	slow.Config.ReadTimeout = 500 * time.Millisecond
	slow.Start()
	defer slow.Close()
	for _, rt := range bodyRoutes {
		// Half the body is sent and the connection kept open: the server's
		// read deadline passes while the handler waits for the rest.
		request := head(rt.method, rt.path, "Content-Length: "+strconv.Itoa(len(rt.body))) + rt.body[:len(rt.body)/2]
		a := sendRaw(t, slow.Listener.Addr().String(), request, true)
		assert.Equal(t, http.StatusRequestTimeout, a.status, "%s %s: %v", rt.method, rt.path, a.body)
		assert.Equal(t, "request_timeout", a.errorField("code"), rt.path)
		if strings.HasPrefix(rt.path, "/v1/") {
			assert.Equal(t, "invalid_request_error", a.errorField("type"), "the provider's shape")
		}
	}
}

// The body limit is still 413, declared or found while reading.
func TestOversizedBodiesStay413(t *testing.T) {
	ts := newServer(t, bootstrap, map[string]string{"SVC_MAX_BODY_BYTES": "2048"})
	addr := ts.Listener.Addr().String()
	for _, rt := range bodyRoutes {
		big := strings.Repeat(" ", 4096) + rt.body
		for name, request := range map[string]string{
			"declared": head(rt.method, rt.path, "Content-Length: "+strconv.Itoa(len(big))) + big,
			"chunked":  head(rt.method, rt.path, "Transfer-Encoding: chunked") + strconv.FormatInt(int64(len(big)), 16) + "\r\n" + big + "\r\n0\r\n\r\n",
		} {
			a := sendRaw(t, addr, request, false)
			assert.Equal(t, http.StatusRequestEntityTooLarge, a.status, "%s, %s: %v", rt.path, name, a.body)
			assert.Equal(t, "body_too_large", a.errorField("code"), "%s, %s", rt.path, name)
		}
	}
}
