// Command svc-email-http is svc's email transport for an HTTP delivery
// service, used when EMAIL_PROVIDER_API_KEY is set: each message is POSTed
// as JSON to EMAIL_PROVIDER_URL with the key as a bearer token, in the shape
// of Resend's send API ({from, to, subject, text, html} → {id}), which
// several services accept.
//
// Environment: EMAIL_PROVIDER_API_KEY (required), EMAIL_PROVIDER_URL
// (default https://api.resend.com/emails), SVC_LOG_LEVEL.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// DefaultURL is the send endpoint when EMAIL_PROVIDER_URL is unset.
const DefaultURL = "https://api.resend.com/emails"

func main() {
	log := pluginapi.Logger(pluginapi.EmailName)
	key := strings.TrimSpace(os.Getenv("EMAIL_PROVIDER_API_KEY"))
	if key == "" {
		log.Error("EMAIL_PROVIDER_API_KEY is not set")
		os.Exit(1)
	}
	url := strings.TrimSpace(os.Getenv("EMAIL_PROVIDER_URL"))
	if url == "" {
		url = DefaultURL
	}
	pluginapi.ServeEmail(&Sender{URL: url, Key: key, Client: &http.Client{Timeout: 30 * time.Second}})
}

// Sender posts messages to a delivery service.
type Sender struct {
	URL    string
	Key    string
	Client *http.Client
}

type sendRequest struct {
	From    string   `json:"from"`
	To      []string `json:"to"`
	Subject string   `json:"subject"`
	Text    string   `json:"text"`
	HTML    string   `json:"html,omitempty"`
}

// Send posts msg and returns the service's message id.
func (s *Sender) Send(ctx context.Context, msg pluginapi.EmailMessage) (string, error) {
	body, err := json.Marshal(sendRequest{From: msg.From, To: msg.To, Subject: msg.Subject, Text: msg.Text, HTML: msg.HTML})
	if err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL, bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+s.Key)
	res, err := s.Client.Do(req)
	if err != nil {
		return "", fmt.Errorf("email service unreachable: %w", err)
	}
	defer res.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	if res.StatusCode/100 != 2 {
		return "", fmt.Errorf("email service answered %d: %.300s", res.StatusCode, strings.ReplaceAll(string(answer), s.Key, "[redacted]"))
	}
	var out struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(answer, &out)
	return out.ID, nil
}
