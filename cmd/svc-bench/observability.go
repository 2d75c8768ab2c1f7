package main

import (
	"compress/gzip"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// The aims for the CPU observability adds to a call.
const (
	metricsTarget = 20 * time.Microsecond
	tracingTarget = 50 * time.Microsecond
)

// obsConfig is one configuration the observability phase measures: svc
// with these variables beside the benchmark's own.
type obsConfig struct {
	name string
	env  []string
	// metricsAddr is where GET /metrics is served without a credential
	// (SVC_METRICS_ADDR), when metrics are on.
	metricsAddr string

	svc    *svcProcess
	client *http.Client
	spans  *spanProcess // a floor's span process, instead of svc
	calls  int          // every call sent, warm-up included: what its spans are counted against
	rounds []float64    // CPU µs a call, of svc and its plugin, each round
	// note says whether svc served metrics as the configuration asks;
	// served is whether it did.
	note   string
	served bool
	rss    float64 // MB, svc and its plugin, after the rounds
}

// obsConfigs are the phase's three configurations: (a) everything off,
// (b) metrics on, (c) metrics on and traces exported over OTLP/HTTP to
// receiver. Only the environment differs.
func obsConfigs(receiver string, metricsB, metricsC string) []*obsConfig {
	return []*obsConfig{
		{name: "off", env: []string{"SVC_METRICS=off"}},
		{name: "metrics", env: []string{"SVC_METRICS=on", "SVC_METRICS_ADDR=" + metricsB}, metricsAddr: metricsB},
		{name: "metrics+tracing", metricsAddr: metricsC, env: []string{
			"SVC_METRICS=on", "SVC_METRICS_ADDR=" + metricsC,
			"OTEL_EXPORTER_OTLP_ENDPOINT=" + receiver, "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf",
		}},
	}
}

// obsResult is what the observability phase measured.
type obsResult struct {
	mode                    string
	conns, rounds, perRound int // perRound: calls a round, to each configuration
	rate                    int // the calls' fixed rate (req/s); 0: a closed loop of conns
	warm                    int
	configs                 []*obsConfig // off, metrics, metrics+tracing
	spans                   otlpCounts   // what the receiver got from metrics+tracing
	// floor is the span processes (spans.go): one keeping the calls' pace
	// alone, one making their spans at it; floorSpans what they exported.
	floor      []*obsConfig
	floorSpans otlpCounts
}

// turn makes n calls to c, or has its span process make n calls' spans.
func (r *obsResult) turn(c *obsConfig, conns, n int) (*sample, error) {
	if c.spans != nil {
		return c.spans.run(n)
	}
	return r.calls(c.client, c.svc.url+"/v1/chat/completions", conns, n)
}

func (c *obsConfig) processes() []namedPID {
	if c.spans != nil {
		return c.spans.processes()
	}
	return c.svc.processes()
}

func observabilityPhase(o options, up *upstream) error {
	r, err := measureObservability(o, up)
	if err != nil {
		return err
	}
	r.print(os.Stdout)
	return nil
}

// measureObservability measures the CPU time metrics and tracing add to a
// call: one svc per configuration, started once and warmed up, then rounds
// of calls to each in turn (the first of each round moving on by one, so
// that no configuration always follows the same one), the CPU time of svc
// and its plugin read at the start of each.
func measureObservability(o options, up *upstream) (*obsResult, error) {
	if o.obsRequests <= 0 || o.obsRounds <= 0 || o.obsRequests < o.obsRounds || o.conns <= 0 {
		return nil, fmt.Errorf("-obs-requests must be at least -obs-rounds, and they and -conns positive")
	}
	mode := modePlugin
	if o.mode == modeInProcess {
		mode = modeInProcess
	}
	recv, err := startReceiver()
	if err != nil {
		return nil, err
	}
	defer recv.close()
	addrs, err := freeAddrs(2)
	if err != nil {
		return nil, err
	}
	res := &obsResult{
		mode: mode, conns: o.conns, rounds: o.obsRounds, perRound: o.obsRequests / o.obsRounds, rate: o.obsRate,
		warm:    min(1000, max(100, o.obsRequests/10)),
		configs: obsConfigs(recv.url, addrs[0], addrs[1]),
	}
	for _, c := range res.configs {
		defer func() {
			if c.svc != nil {
				c.svc.stop()
			}
		}()
		oc := o
		oc.env = append(slices.Clone(o.env), c.env...)
		var file *providersFile
		if mode == modeInProcess {
			f := singleProvider(mode, up.url)
			file = &f
		}
		p, err := startSVC(oc, up.url, file)
		if err != nil {
			return nil, fmt.Errorf("observability (%s): %w", c.name, err)
		}
		c.svc, c.client = p, client(o.conns)
		if file != nil && !p.providersFile {
			return nil, fmt.Errorf("-mode %s: this svc reads no providers file (SVC_PROVIDERS_FILE)", mode)
		}
	}

	floorRecv, err := startReceiver()
	if err != nil {
		return nil, err
	}
	defer floorRecv.close()
	for _, makes := range []bool{false, true} {
		p, err := startSpans(floorRecv.url, o.obsRate, makes)
		if err != nil {
			return nil, fmt.Errorf("observability: span process: %w", err)
		}
		defer p.stop()
		name := "pace alone"
		if makes {
			name = "spans alone"
		}
		res.floor = append(res.floor, &obsConfig{name: name, spans: p})
	}
	all := append(slices.Clone(res.configs), res.floor...)

	for _, c := range all {
		var s *sample
		if c.spans != nil {
			s, err = c.spans.run(res.warm)
		} else {
			s, err = closedLoopN(c.client, c.svc.url+"/v1/chat/completions", o.conns, res.warm)
		}
		if err != nil {
			return nil, fmt.Errorf("observability (%s): warm-up: %w", c.name, err)
		}
		c.calls += s.ok + s.errors
	}
	// A configuration's round runs from the start of its calls to the start
	// of its next round's calls (the last, to the end of the rounds): the
	// work svc does after its calls, while the others have their turn (a
	// batch of spans exported late), counts against the calls that made it.
	procs := make([][]namedPID, len(all))
	for i, c := range all {
		procs[i] = c.processes()
	}
	mark := make([]time.Duration, len(all)) // CPU at the start of each one's round
	ok := make([]int, len(all))             // its calls in that round
	for r := range res.rounds {
		for j := range all {
			i := (r + j) % len(all)
			c := all[i]
			now := sumDurations(cpuTimes(procs[i]))
			if r > 0 {
				c.rounds = append(c.rounds, perCall(now-mark[i], ok[i]))
			}
			mark[i] = now
			s, err := res.turn(c, o.conns, res.perRound)
			if err != nil {
				return nil, fmt.Errorf("observability (%s): %w", c.name, err)
			}
			c.calls += s.ok + s.errors
			ok[i] = s.ok
		}
	}
	for i, c := range all {
		c.rounds = append(c.rounds, perCall(sumDurations(cpuTimes(procs[i]))-mark[i], ok[i]))
	}

	for _, c := range res.configs {
		c.note, c.served = metricsNote(c)
		for _, p := range c.svc.processes() {
			rss, _ := memory(p.pid)
			c.rss += rss
		}
	}
	// Stopping svc flushes its exporter: every span it made is in by then.
	for _, c := range res.configs {
		c.svc.stop()
		c.svc = nil
	}
	res.spans = recv.counts()
	for _, c := range res.floor {
		if err := c.spans.stop(); err != nil {
			return nil, fmt.Errorf("observability (%s): %w", c.name, err)
		}
	}
	res.floorSpans = floorRecv.counts()
	return res, nil
}

// print writes the phase's figures: medians over the rounds of each
// configuration's CPU a call, and of the differences between them round by
// round, against their targets.
func (r *obsResult) print(w io.Writer) {
	load := fmt.Sprintf("closed loop, %d connections", r.conns)
	if r.rate > 0 {
		load = fmt.Sprintf("%d calls a second, at most %d connections", r.rate, r.conns)
	}
	fmt.Fprintf(w, "\nobservability: CPU time a call, svc and its child processes (%s mode), %s, upstream without latency;\n"+
		"  %d rounds of %d calls to each configuration in turn, after %d to warm up; medians over the rounds\n",
		r.mode, load, r.rounds, r.perRound, r.warm)
	fmt.Fprintf(w, "  (CPU time is read in ticks of 10 ms: ±%.1f µs a round for each process)\n", 10_000/float64(max(r.perRound, 1)))
	for _, c := range r.configs {
		fmt.Fprintf(w, "  %-16s %8.1f µs a call           RSS %.1f MB; %s   (rounds: %s)\n", c.name, median(c.rounds), c.rss, c.note, rounds(c.rounds))
	}
	a, b, c := r.configs[0], r.configs[1], r.configs[2]
	for _, d := range []struct {
		name   string
		x, y   *obsConfig
		target time.Duration
		active bool
	}{
		{"metrics add", b, a, metricsTarget, b.served && c.served},
		{"tracing adds", c, b, tracingTarget, r.spans.spans > 0},
	} {
		each := deltas(d.x.rounds, d.y.rounds)
		fmt.Fprintf(w, "  %-16s %+8.1f µs a call ± %-5.1f %s   (%s − %s, each round: %s)\n", d.name, median(each), spread(each),
			verdict(median(each), spread(each), d.target, d.active), d.x.name, d.y.name, rounds(each))
	}
	fmt.Fprintf(w, "  %s\n", r.spans.report(c.calls))
	if len(r.floor) < 2 {
		return
	}
	pace, spans := r.floor[0], r.floor[1]
	fmt.Fprintf(w, "  the floor: a call's eight spans through the SDK and svc's exporter, made in a process of their own at the calls' pace\n")
	for _, f := range r.floor {
		fmt.Fprintf(w, "  %-16s %8.1f µs a call   (rounds: %s)\n", f.name, median(f.rounds), rounds(f.rounds))
	}
	floor := deltas(spans.rounds, pace.rounds)
	over := deltas(deltas(c.rounds, b.rounds), floor)
	fmt.Fprintf(w, "  %-16s %+8.1f µs a call ± %-5.1f (spans alone − pace alone, each round: %s)\n", "the spans cost", median(floor), spread(floor), rounds(floor))
	fmt.Fprintf(w, "  %-16s %+8.1f µs a call ± %-5.1f (what tracing adds − what the spans cost, each round: %s)\n", "svc's own part", median(over), spread(over), rounds(over))
	if t := float64(tracingTarget.Microseconds()); median(floor) >= t {
		fmt.Fprintf(w, "  the spans alone cost more than tracing's target (< %.0f µs) at this pace: the target is below their floor\n", t)
	}
	fmt.Fprintf(w, "  floor's %s\n", r.floorSpans.report(spans.calls))
}

// verdict says how a median delta stands against its target, when what it
// measures was active, and whether the rounds agree closely enough to tell.
func verdict(delta, spread float64, target time.Duration, active bool) string {
	t := float64(target.Microseconds())
	if !active {
		return fmt.Sprintf("target < %.0f µs: not measured (not active in this svc)", t)
	}
	v := "met"
	if delta >= t {
		v = "MISSED"
	}
	if spread >= t {
		v += ", but the rounds spread wider than the target (more calls, or a quieter machine)"
	}
	return fmt.Sprintf("target < %.0f µs: %s", t, v)
}

// metricsNote tells whether c's svc serves metrics as its configuration
// says (served: with metrics on, GET /metrics on SVC_METRICS_ADDR counts
// the calls it answered; with metrics off, the main listener's GET
// /metrics is a 404).
func metricsNote(c *obsConfig) (note string, served bool) {
	if c.metricsAddr == "" {
		res, err := http.Get(c.svc.url + "/metrics")
		if err != nil {
			return "GET /metrics: " + err.Error(), false
		}
		res.Body.Close()
		if res.StatusCode == http.StatusNotFound {
			return "GET /metrics 404, as metrics off should", true
		}
		return fmt.Sprintf("GET /metrics %d: metrics off should answer 404", res.StatusCode), false
	}
	res, err := http.Get("http://" + c.metricsAddr + "/metrics")
	if err != nil {
		return "metrics not served on SVC_METRICS_ADDR: metrics not active in this svc", false
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Sprintf("GET /metrics %d: metrics not active in this svc", res.StatusCode), false
	}
	n, err := gatewayRequests(res.Body)
	if err != nil {
		return "GET /metrics: " + err.Error(), false
	}
	return fmt.Sprintf("svc_gateway_requests_total %.0f of %d calls", n, c.calls), n > 0
}

// gatewayRequests reads a scrape in Prometheus' text format and sums
// svc_gateway_requests_total over its labels.
func gatewayRequests(r io.Reader) (float64, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(r)
	if err != nil {
		return 0, fmt.Errorf("not Prometheus' text format: %w", err)
	}
	f, ok := families["svc_gateway_requests_total"]
	if !ok {
		return 0, fmt.Errorf("no svc_gateway_requests_total among %d families", len(families))
	}
	var n float64
	for _, m := range f.GetMetric() {
		n += m.GetCounter().GetValue()
	}
	return n, nil
}

// calls makes a round's n calls to url: in a closed loop, or at the fixed
// rate. A closed loop charges a configuration for its own slowness (fewer
// calls a second make smaller ledger batches and more wake-ups a call); at
// a fixed rate every configuration does the same work a second, so the
// difference between them is what each call adds.
func (r *obsResult) calls(c *http.Client, url string, conns, n int) (*sample, error) {
	if r.rate <= 0 {
		return closedLoopN(c, url, conns, n)
	}
	return openLoop(c, url, r.rate, time.Duration(n)*time.Second/time.Duration(r.rate))
}

// closedLoopN makes n calls to url through c, conns at a time.
func closedLoopN(c *http.Client, url string, conns, n int) (*sample, error) {
	var next, failed atomic.Int64
	var wg sync.WaitGroup
	for range conns {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				if err := call(c, url); err != nil {
					failed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	errors := int(failed.Load())
	if errors > n/100 {
		return nil, fmt.Errorf("%s: %d of %d calls failed", url, errors, n)
	}
	return &sample{ok: n - errors, errors: errors}, nil
}

// freeAddrs finds n free ports on 127.0.0.1 for svc to listen on.
func freeAddrs(n int) ([]string, error) {
	var addrs []string
	var lns []net.Listener
	defer func() {
		for _, l := range lns {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, l)
		addrs = append(addrs, l.Addr().String())
	}
	return addrs, nil
}

func sumDurations(ds []time.Duration) time.Duration {
	var t time.Duration
	for _, d := range ds {
		t += d
	}
	return t
}

// perCall is used CPU time a call of n, in µs.
func perCall(used time.Duration, n int) float64 {
	return float64(used) / float64(time.Microsecond) / float64(max(n, 1))
}

// deltas are each round's x minus the same round's y.
func deltas(x, y []float64) []float64 {
	d := make([]float64, min(len(x), len(y)))
	for i := range d {
		d[i] = x[i] - y[i]
	}
	return d
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// spread is half the interquartile range of xs: how far its middle half
// strays from its median.
func spread(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	q := func(p float64) float64 { // linear between the two nearest ranks
		x := p * float64(len(s)-1)
		lo := int(x)
		hi := min(lo+1, len(s)-1)
		return s[lo] + (s[hi]-s[lo])*(x-float64(lo))
	}
	return (q(0.75) - q(0.25)) / 2
}

func rounds(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf("%.0f", x)
	}
	return strings.Join(parts, " ")
}

// receiver is an OTLP/HTTP traces endpoint (POST /v1/traces) that decodes
// each export and counts its spans and their traces.
type receiver struct {
	srv *http.Server
	url string

	mu      sync.Mutex
	exports int
	spans   int
	traces  map[string]struct{}
	refused int // bodies that were not an export request
}

func startReceiver() (*receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &receiver{url: "http://" + ln.Addr().String(), traces: map[string]struct{}{}}
	r.srv = &http.Server{Handler: r, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

func (r *receiver) close() { _ = r.srv.Close() }

// maxExport bounds an export's body, as a collector's receiver would.
const maxExport = 64 << 20

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.URL.Path != "/v1/traces" {
		http.NotFound(w, req)
		return
	}
	if req.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	var body io.Reader = req.Body
	if strings.EqualFold(req.Header.Get("Content-Encoding"), "gzip") {
		z, err := gzip.NewReader(req.Body)
		if err != nil {
			r.refuse(w, err)
			return
		}
		defer z.Close()
		body = z
	}
	b, err := io.ReadAll(io.LimitReader(body, maxExport))
	if err != nil {
		r.refuse(w, err)
		return
	}
	var export coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &export); err != nil {
		r.refuse(w, err)
		return
	}
	r.count(&export)
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func (r *receiver) refuse(w http.ResponseWriter, err error) {
	r.mu.Lock()
	r.refused++
	r.mu.Unlock()
	http.Error(w, "not an OTLP export: "+err.Error(), http.StatusBadRequest)
}

func (r *receiver) count(export *coltracepb.ExportTraceServiceRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.exports++
	for _, rs := range export.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				r.spans++
				r.traces[string(s.GetTraceId())] = struct{}{}
			}
		}
	}
}

// counts is what the receiver got so far.
func (r *receiver) counts() otlpCounts {
	r.mu.Lock()
	defer r.mu.Unlock()
	return otlpCounts{exports: r.exports, spans: r.spans, traces: len(r.traces), refused: r.refused}
}

// otlpCounts is what an OTLP receiver got: export requests, their spans,
// the traces those belong to, and bodies refused as no export at all.
type otlpCounts struct {
	exports, spans, traces, refused int
}

// report says what the receiver got, against the calls the traced svc
// answered.
func (n otlpCounts) report(calls int) string {
	var refused string
	if n.refused > 0 {
		refused = fmt.Sprintf("; %d bodies refused (not an OTLP export)", n.refused)
	}
	if n.spans == 0 {
		return "no spans received: tracing not active in this svc" + refused
	}
	return fmt.Sprintf("spans received %d in %d exports: %.2f a call, %d traces for %d calls%s",
		n.spans, n.exports, float64(n.spans)/float64(max(calls, 1)), n.traces, calls, refused)
}
