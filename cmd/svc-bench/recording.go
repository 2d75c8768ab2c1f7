package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"os"
	"sync"
)

// A recording relay is a bare relay that also does the least a gateway
// recording every call must do before it answers: read and decode the
// request, read and decode the answer, and append both to a journal file
// with one write(2). It is the floor of any recording gateway, as the bare
// relay is the floor of any gateway: what svc adds over it is svc's own
// choice of work.

// journalLimit is the size past which the recording relay's journal is
// emptied, so that a long run does not fill the disk.
const journalLimit = 64 << 20

// recorder appends each call's record to a journal file.
type recorder struct {
	mu   sync.Mutex
	file *os.File
	size int64
	buf  []byte
}

func newRecorder() (*recorder, error) {
	f, err := os.CreateTemp("", "svc-bench-journal-*")
	if err != nil {
		return nil, err
	}
	// Unlinked at once: the file lives as long as the relay holds it.
	_ = os.Remove(f.Name())
	return &recorder{file: f}, nil
}

// record appends one frame: the two bodies' lengths, then the bodies.
func (r *recorder) record(request, answer []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.size > journalLimit {
		if err := r.file.Truncate(0); err != nil {
			return err
		}
		if _, err := r.file.Seek(0, io.SeekStart); err != nil {
			return err
		}
		r.size = 0
	}
	r.buf = binary.LittleEndian.AppendUint32(r.buf[:0], uint32(len(request)))
	r.buf = binary.LittleEndian.AppendUint32(r.buf, uint32(len(answer)))
	r.buf = append(r.buf, request...)
	r.buf = append(r.buf, answer...)
	n, err := r.file.Write(r.buf)
	r.size += int64(n)
	return err
}

// benchRequest and benchAnswer are what a gateway needs of a chat call
// and its answer: the model it routes on and the usage it prices.
type benchRequest struct {
	Model    string            `json:"model"`
	Messages []json.RawMessage `json:"messages"`
}

type benchAnswer struct {
	Model string `json:"model"`
	Usage struct {
		PromptTokens     int64 `json:"prompt_tokens"`
		CompletionTokens int64 `json:"completion_tokens"`
	} `json:"usage"`
}

// recording wraps proxy so that each call is decoded and journaled before
// its answer goes back.
func recording(proxy *httputil.ReverseProxy, rec *recorder) http.Handler {
	type requestKey struct{}
	proxy.ModifyResponse = func(res *http.Response) error {
		answer, err := io.ReadAll(res.Body)
		_ = res.Body.Close()
		if err != nil {
			return err
		}
		var a benchAnswer
		if err := json.Unmarshal(answer, &a); err != nil {
			return fmt.Errorf("answer: %w", err)
		}
		request, _ := res.Request.Context().Value(requestKey{}).([]byte)
		if err := rec.record(request, answer); err != nil {
			return err
		}
		res.Body = io.NopCloser(bytes.NewReader(answer))
		return nil
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var req benchRequest
		if err := json.Unmarshal(body, &req); err != nil || req.Model == "" || len(req.Messages) == 0 {
			http.Error(w, "bad request: "+errors.Join(err, errors.New("a model and messages")).Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		proxy.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestKey{}, body)))
	})
}
