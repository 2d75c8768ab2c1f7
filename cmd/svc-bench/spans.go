package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/svc-gateway/svc/internal/tracing"
)

// The floor under what tracing adds to a call, measured beside svc in the
// observability phase: a process of its own that makes a call's eight
// spans (tracing.CallSpans, through the SDK, svc's batch processor and its
// OTLP/HTTP exporter) at the pace of svc's calls, and the same process
// keeping that pace without making them. The difference is the SDK's own
// work for the spans at that rate, cold caches and garbage collection
// included, with none of svc's: what tracing cannot cost less than.

// serveSpans is the process (-spans URL): it reads a count from each line
// of its input, makes that many calls' spans (with spans; else it only
// keeps the pace) at rate calls a second (rate 0: one after the other),
// and writes a line when done. At the end of its input it exports what it
// still holds and returns.
func serveSpans(receiver string, rate int, spans bool, in io.Reader, out io.Writer) error {
	// A queue that holds a round's spans however fast they come (a closed
	// loop makes them faster than svc's calls do): a span dropped would
	// cost nothing, and lower the floor.
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": receiver, "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
		"OTEL_BSP_MAX_QUEUE_SIZE": strconv.Itoa(1 << 20)}
	tr, err := tracing.New(context.Background(), tracing.Options{On: true, Getenv: func(k string) string { return env[k] }})
	if err != nil {
		return err
	}
	tracer := tr.Tracer()
	lines := bufio.NewScanner(in)
	for lines.Scan() {
		n, err := strconv.Atoi(strings.TrimSpace(lines.Text()))
		if err != nil || n < 0 {
			return fmt.Errorf("not a count of calls: %q", lines.Text())
		}
		var interval time.Duration
		if rate > 0 {
			interval = time.Second / time.Duration(rate)
		}
		start := time.Now()
		for i := range n {
			if interval > 0 {
				time.Sleep(time.Until(start.Add(time.Duration(i) * interval)))
			}
			if spans {
				tracing.CallSpans(tracer)
			}
		}
		if _, err := fmt.Fprintln(out, n); err != nil {
			return err
		}
	}
	if err := lines.Err(); err != nil {
		return err
	}
	return tr.Shutdown(context.Background())
}

// spanProcess is this program run with -spans, as a child.
type spanProcess struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	done bool
}

// startSpans starts a span process exporting to receiver, making spans
// (or only keeping the pace) at rate.
func startSpans(receiver string, rate int, spans bool) (*spanProcess, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, "-spans", receiver, "-obs-rate", strconv.Itoa(rate), "-spans-make="+strconv.FormatBool(spans))
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &spanProcess{cmd: cmd, in: in, out: bufio.NewReader(out)}, nil
}

// run has the process make n calls' spans, and waits until it has.
func (p *spanProcess) run(n int) (*sample, error) {
	if _, err := fmt.Fprintln(p.in, n); err != nil {
		return nil, err
	}
	line, err := p.out.ReadString('\n')
	if err != nil {
		return nil, fmt.Errorf("span process: %w", err)
	}
	if strings.TrimSpace(line) != strconv.Itoa(n) {
		return nil, fmt.Errorf("span process answered %q to %d calls", line, n)
	}
	return &sample{ok: n}, nil
}

func (p *spanProcess) processes() []namedPID {
	return []namedPID{{name: "svc-bench -spans", pid: p.cmd.Process.Pid}}
}

// stop ends its input, so that it exports what it holds, and waits for it.
func (p *spanProcess) stop() error {
	if p.done {
		return nil
	}
	p.done = true
	_ = p.in.Close()
	return p.cmd.Wait()
}
