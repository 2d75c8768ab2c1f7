// Command svc-email-smtp is svc's SMTP email transport.
//
// Environment: SMTP_HOST (required), SMTP_PORT (default 587), SMTP_USERNAME
// and SMTP_PASSWORD (PLAIN authentication when set), SMTP_TLS (starttls,
// the default: upgrade the connection and refuse a server that cannot;
// tls: TLS from the first byte, usually port 465; none: no encryption,
// for a relay on the same host only), SVC_LOG_LEVEL.
package main

import (
	"os"
	"strconv"
	"strings"

	"github.com/svc-gateway/svc/pkg/pluginapi"
)

func main() {
	log := pluginapi.Logger(pluginapi.EmailName)
	s := &SMTP{
		Host:     strings.TrimSpace(os.Getenv("SMTP_HOST")),
		Port:     587,
		Username: os.Getenv("SMTP_USERNAME"),
		Password: os.Getenv("SMTP_PASSWORD"),
		TLS:      strings.ToLower(strings.TrimSpace(os.Getenv("SMTP_TLS"))),
	}
	if p := os.Getenv("SMTP_PORT"); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			log.Error("SMTP_PORT must be a port number")
			os.Exit(1)
		}
		s.Port = n
	}
	if s.TLS == "" {
		s.TLS = "starttls"
	}
	if err := s.Check(); err != nil {
		log.Error("invalid configuration", "error", err)
		os.Exit(1)
	}
	pluginapi.ServeEmail(s)
}
