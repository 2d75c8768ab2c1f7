package main

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"net/smtp"
	"strconv"
	"strings"
	"time"

	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// SMTP sends messages through an SMTP server.
type SMTP struct {
	Host, Username, Password string
	Port                     int
	TLS                      string // starttls, tls or none
	// TLSConfig overrides the TLS settings (tests trust their own server).
	TLSConfig *tls.Config
}

// Check refuses a configuration that cannot work.
func (s *SMTP) Check() error {
	switch {
	case s.Host == "":
		return errors.New("SMTP_HOST is not set")
	case s.TLS != "starttls" && s.TLS != "tls" && s.TLS != "none":
		return fmt.Errorf("SMTP_TLS must be starttls, tls or none, not %q", s.TLS)
	}
	return nil
}

func (s *SMTP) tlsConfig() *tls.Config {
	if s.TLSConfig != nil {
		return s.TLSConfig
	}
	return &tls.Config{ServerName: s.Host, MinVersion: tls.VersionTLS12}
}

// Send delivers msg and returns its Message-ID.
func (s *SMTP) Send(ctx context.Context, msg pluginapi.EmailMessage) (string, error) {
	from, err := mail.ParseAddress(msg.From)
	if err != nil {
		return "", fmt.Errorf("sender %q: %w", msg.From, err)
	}
	var to []string
	for _, t := range msg.To {
		a, err := mail.ParseAddress(t)
		if err != nil {
			return "", fmt.Errorf("recipient %q: %w", t, err)
		}
		to = append(to, a.Address)
	}
	if len(to) == 0 {
		return "", errors.New("no recipient")
	}
	id := messageID(from.Address)
	body, err := compose(msg, id, time.Now())
	if err != nil {
		return "", err
	}
	c, err := s.dial(ctx)
	if err != nil {
		return "", err
	}
	defer c.Close()
	if s.Username != "" {
		if err := c.Auth(smtp.PlainAuth("", s.Username, s.Password, s.Host)); err != nil {
			return "", fmt.Errorf("smtp auth: %w", err)
		}
	}
	if err := c.Mail(from.Address); err != nil {
		return "", fmt.Errorf("smtp MAIL FROM: %w", err)
	}
	for _, r := range to {
		if err := c.Rcpt(r); err != nil {
			return "", fmt.Errorf("smtp RCPT TO %s: %w", r, err)
		}
	}
	w, err := c.Data()
	if err != nil {
		return "", fmt.Errorf("smtp DATA: %w", err)
	}
	if _, err := w.Write(body); err != nil {
		return "", fmt.Errorf("smtp DATA: %w", err)
	}
	if err := w.Close(); err != nil {
		return "", fmt.Errorf("smtp DATA: %w", err)
	}
	return id, c.Quit()
}

// dial connects as SMTP_TLS says; starttls refuses a server that cannot
// upgrade, so that credentials never cross in the clear.
func (s *SMTP) dial(ctx context.Context) (*smtp.Client, error) {
	addr := net.JoinHostPort(s.Host, strconv.Itoa(s.Port))
	d := &net.Dialer{Timeout: 15 * time.Second}
	var conn net.Conn
	var err error
	if s.TLS == "tls" {
		conn, err = (&tls.Dialer{NetDialer: d, Config: s.tlsConfig()}).DialContext(ctx, "tcp", addr)
	} else {
		conn, err = d.DialContext(ctx, "tcp", addr)
	}
	if err != nil {
		return nil, fmt.Errorf("smtp connect %s: %w", addr, err)
	}
	if deadline, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(deadline)
	} else {
		_ = conn.SetDeadline(time.Now().Add(time.Minute))
	}
	c, err := smtp.NewClient(conn, s.Host)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("smtp greeting: %w", err)
	}
	if s.TLS == "starttls" {
		if ok, _ := c.Extension("STARTTLS"); !ok {
			c.Close()
			return nil, errors.New("smtp server does not offer STARTTLS (set SMTP_TLS=none only for a local relay)")
		}
		if err := c.StartTLS(s.tlsConfig()); err != nil {
			c.Close()
			return nil, fmt.Errorf("smtp STARTTLS: %w", err)
		}
	}
	return c, nil
}

func messageID(from string) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	domain := "localhost"
	if i := strings.LastIndexByte(from, '@'); i >= 0 {
		domain = from[i+1:]
	}
	return "<" + hex.EncodeToString(b[:]) + "@" + domain + ">"
}

// compose writes msg as a MIME message: multipart/alternative with the
// plain text first and the HTML second, both quoted-printable.
func compose(msg pluginapi.EmailMessage, id string, at time.Time) ([]byte, error) {
	for _, h := range append([]string{msg.From, msg.Subject}, msg.To...) {
		if strings.ContainsAny(h, "\r\n") {
			return nil, errors.New("a header holds a line break")
		}
	}
	var b strings.Builder
	boundary := "svc-" + strings.Trim(id, "<>")
	boundary = strings.NewReplacer("@", "-", ".", "-").Replace(boundary)
	header := func(k, v string) { b.WriteString(k + ": " + v + "\r\n") }
	header("From", msg.From)
	header("To", strings.Join(msg.To, ", "))
	header("Subject", mime.QEncoding.Encode("utf-8", msg.Subject))
	header("Date", at.UTC().Format(time.RFC1123Z))
	header("Message-ID", id)
	header("MIME-Version", "1.0")
	header("Content-Type", `multipart/alternative; boundary="`+boundary+`"`)
	b.WriteString("\r\n")
	for _, part := range []struct{ kind, body string }{{"text/plain", msg.Text}, {"text/html", msg.HTML}} {
		if part.body == "" {
			continue
		}
		b.WriteString("--" + boundary + "\r\n")
		header("Content-Type", part.kind+"; charset=utf-8")
		header("Content-Transfer-Encoding", "quoted-printable")
		b.WriteString("\r\n")
		qp := quotedprintable.NewWriter(&b)
		_, _ = qp.Write([]byte(part.body))
		_ = qp.Close()
		b.WriteString("\r\n")
	}
	b.WriteString("--" + boundary + "--\r\n")
	return []byte(b.String()), nil
}
