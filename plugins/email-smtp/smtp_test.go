package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/base64"
	"io"
	"mime"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"net/mail"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// server is an SMTP server for the test: it speaks enough of the protocol
// for net/smtp (EHLO, STARTTLS, AUTH PLAIN, MAIL, RCPT, DATA, QUIT) and
// keeps what it received.
type server struct {
	ln       net.Listener
	tls      *tls.Config // offered for STARTTLS, or used from the first byte
	implicit bool
	starttls bool

	mu       sync.Mutex
	auth     string
	from     string
	to       []string
	data     string
	upgraded bool
}

func newServer(t *testing.T, mode string) (*server, *tls.Config) {
	// httptest's certificate is valid for 127.0.0.1; its client trusts it.
	h := httptest.NewTLSServer(http.NotFoundHandler())
	t.Cleanup(h.Close)
	serverTLS := &tls.Config{Certificates: h.TLS.Certificates}
	clientTLS := &tls.Config{RootCAs: h.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs, ServerName: "127.0.0.1"}
	s := &server{tls: serverTLS, implicit: mode == "tls", starttls: mode == "starttls"}
	var err error
	if s.implicit {
		s.ln, err = tls.Listen("tcp", "127.0.0.1:0", serverTLS)
	} else {
		s.ln, err = net.Listen("tcp", "127.0.0.1:0")
	}
	require.NoError(t, err)
	t.Cleanup(func() { s.ln.Close() })
	go func() {
		for {
			c, err := s.ln.Accept()
			if err != nil {
				return
			}
			go s.serve(c)
		}
	}()
	return s, clientTLS
}

func (s *server) port() int { return s.ln.Addr().(*net.TCPAddr).Port }

func (s *server) serve(c net.Conn) {
	defer c.Close()
	r, w := bufio.NewReader(c), bufio.NewWriter(c)
	reply := func(line string) { w.WriteString(line + "\r\n"); w.Flush() }
	reply("220 test ESMTP")
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimRight(line, "\r\n")
		cmd := strings.ToUpper(strings.SplitN(line, " ", 2)[0])
		switch cmd {
		case "EHLO", "HELO":
			w.WriteString("250-test\r\n")
			if s.starttls {
				w.WriteString("250-STARTTLS\r\n")
			}
			reply("250 AUTH PLAIN")
		case "STARTTLS":
			reply("220 go ahead")
			tc := tls.Server(c, s.tls)
			if tc.Handshake() != nil {
				return
			}
			c, r, w = tc, bufio.NewReader(tc), bufio.NewWriter(tc)
			s.mu.Lock()
			s.upgraded = true
			s.mu.Unlock()
		case "AUTH":
			s.mu.Lock()
			s.auth = strings.TrimPrefix(line, "AUTH PLAIN ")
			s.mu.Unlock()
			reply("235 ok")
		case "MAIL":
			s.mu.Lock()
			s.from = line
			s.mu.Unlock()
			reply("250 ok")
		case "RCPT":
			s.mu.Lock()
			s.to = append(s.to, line)
			s.mu.Unlock()
			reply("250 ok")
		case "DATA":
			reply("354 go")
			var b strings.Builder
			for {
				l, err := r.ReadString('\n')
				if err != nil {
					return
				}
				if l == ".\r\n" {
					break
				}
				b.WriteString(strings.TrimPrefix(l, "."))
			}
			s.mu.Lock()
			s.data = b.String()
			s.mu.Unlock()
			reply("250 queued")
		case "QUIT":
			reply("221 bye")
			return
		default:
			reply("502 unknown")
		}
	}
}

var message = pluginapi.EmailMessage{From: "svc <no-reply@example.com>", To: []string{"Ann <ann@example.com>"},
	Subject: "Vous êtes invité", Text: "Accept: https://svc.example.com/accept-invite?token=abc=123",
	HTML: `<p><a href="https://svc.example.com/accept-invite?token=abc=123">Accept</a></p>`}

func TestSendOverEachTLSMode(t *testing.T) {
	for _, mode := range []string{"starttls", "tls", "none"} {
		t.Run(mode, func(t *testing.T) {
			srv, clientTLS := newServer(t, mode)
			s := &SMTP{Host: "127.0.0.1", Port: srv.port(), TLS: mode, TLSConfig: clientTLS}
			if mode != "none" {
				s.Username, s.Password = "svc", "s3cret"
			}
			require.NoError(t, s.Check())
			id, err := s.Send(context.Background(), message)
			require.NoError(t, err)
			assert.Contains(t, id, "@example.com>")

			srv.mu.Lock()
			defer srv.mu.Unlock()
			assert.Equal(t, mode == "starttls", srv.upgraded)
			if mode != "none" {
				creds, err := base64.StdEncoding.DecodeString(srv.auth)
				require.NoError(t, err)
				assert.Equal(t, "\x00svc\x00s3cret", string(creds))
			}
			assert.Equal(t, "MAIL FROM:<no-reply@example.com>", strings.SplitN(srv.from, " BODY", 2)[0])
			assert.Equal(t, []string{"RCPT TO:<ann@example.com>"}, srv.to)

			m, err := mail.ReadMessage(strings.NewReader(srv.data))
			require.NoError(t, err)
			subject, err := new(mime.WordDecoder).DecodeHeader(m.Header.Get("Subject"))
			require.NoError(t, err)
			assert.Equal(t, "Vous êtes invité", subject)
			assert.Equal(t, id, m.Header.Get("Message-ID"))
			parts := readParts(t, m)
			assert.Equal(t, message.Text, parts["text/plain; charset=utf-8"])
			assert.Equal(t, message.HTML, parts["text/html; charset=utf-8"])
		})
	}
}

func readParts(t *testing.T, m *mail.Message) map[string]string {
	t.Helper()
	ct := m.Header.Get("Content-Type")
	boundary := ct[strings.Index(ct, `boundary="`)+len(`boundary="`) : len(ct)-1]
	mr := multipart.NewReader(m.Body, boundary)
	out := map[string]string{}
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			return out
		}
		require.NoError(t, err)
		b, err := io.ReadAll(p) // multipart decodes quoted-printable
		require.NoError(t, err)
		out[p.Header.Get("Content-Type")] = string(b)
	}
}

func TestStartTLSIsRequiredWhenAsked(t *testing.T) {
	srv, clientTLS := newServer(t, "none") // offers no STARTTLS
	s := &SMTP{Host: "127.0.0.1", Port: srv.port(), TLS: "starttls", TLSConfig: clientTLS, Username: "svc", Password: "s3cret"}
	_, err := s.Send(context.Background(), message)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "STARTTLS")
	srv.mu.Lock()
	defer srv.mu.Unlock()
	assert.Empty(t, srv.auth, "no credentials crossed in the clear")
}

func TestBadInput(t *testing.T) {
	s := &SMTP{Host: "127.0.0.1", Port: 1, TLS: "none"}
	for _, m := range []pluginapi.EmailMessage{
		{From: "not an address", To: []string{"a@b.c"}},
		{From: "a@b.c", To: []string{"nope"}},
		{From: "a@b.c"},
		{From: "a@b.c", To: []string{"a@b.c"}, Subject: "x\r\nBcc: victim@example.com"},
	} {
		_, err := s.Send(context.Background(), m)
		assert.Error(t, err, m)
	}
	assert.Error(t, (&SMTP{Host: "h", TLS: "ssl"}).Check())
	assert.Error(t, (&SMTP{TLS: "tls"}).Check())
}
