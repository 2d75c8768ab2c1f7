package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// How a chaosUpstream answers.
const (
	behaveNormal   = iota // every call answered after the latency
	behaveFlaky           // of every ten calls: one 503, one 429 with Retry-After: 1, one hang; seven answered
	behaveDown5xx         // every call a 503
	behaveDownHang        // every call hangs until the caller gives up
)

// chaosUpstream is an OpenAI-compatible chat upstream that fails on
// purpose, and counts the calls each request made to it: a request is
// known by the tag its body carries (see tagOf).
type chaosUpstream struct {
	srv       *http.Server
	url       string
	behaviour int
	latency   time.Duration
	hang      time.Duration // the longest a hang lasts when the caller stays
	// retryAfter is the Retry-After of a 429, in whole seconds; "" sends
	// none.
	retryAfter string

	seq   atomic.Int64 // calls so far, which decides a flaky call's fate
	mu    sync.Mutex
	calls map[int64]int // tag → calls
}

func startChaos(behaviour int, latency, hang time.Duration) (*chaosUpstream, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	u := &chaosUpstream{url: "http://" + ln.Addr().String(), behaviour: behaviour, latency: latency, hang: hang, calls: map[int64]int{}}
	u.srv = &http.Server{Handler: http.HandlerFunc(u.serve), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = u.srv.Serve(ln) }()
	return u, nil
}

func (u *chaosUpstream) close() { _ = u.srv.Close() }

// fate is what the call numbered n gets.
func (u *chaosUpstream) fate(n int64) int {
	switch u.behaviour {
	case behaveFlaky:
		switch n % 10 {
		case 0:
			return http.StatusServiceUnavailable
		case 1:
			return http.StatusTooManyRequests
		case 2:
			return 0 // a hang
		}
		return http.StatusOK
	case behaveDown5xx:
		return http.StatusServiceUnavailable
	case behaveDownHang:
		return 0
	}
	return http.StatusOK
}

func (u *chaosUpstream) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if tag, ok := tagOf(body); ok {
		u.mu.Lock()
		u.calls[tag]++
		u.mu.Unlock()
	}
	w.Header().Set("Content-Type", "application/json")
	switch status := u.fate(u.seq.Add(1) - 1); status {
	case 0:
		select {
		case <-r.Context().Done():
		case <-time.After(u.hang):
		}
	case http.StatusTooManyRequests:
		if u.retryAfter != "" {
			w.Header().Set("Retry-After", u.retryAfter)
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`)
	case http.StatusServiceUnavailable:
		w.WriteHeader(status)
		_, _ = io.WriteString(w, `{"error":{"message":"The server is overloaded","type":"server_error","code":null}}`)
	default:
		time.Sleep(u.latency)
		_, _ = io.WriteString(w, completion)
	}
}

// callsOf is how many calls the request tagged tag made here.
func (u *chaosUpstream) callsOf(tag int64) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.calls[tag]
}

// tagOf reads the number chatBody put in a request: "benchmarks (N)".
func tagOf(body []byte) (int64, bool) {
	_, rest, ok := bytes.Cut(body, []byte("benchmarks ("))
	if !ok {
		return 0, false
	}
	digits, _, ok := bytes.Cut(rest, []byte(")"))
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(string(digits), 10, 64)
	return n, err == nil
}

// outcome is one call of a chaos phase, as its client saw it.
type outcome struct {
	tag     int64
	latency time.Duration
	status  int // 0: no answer
	runID   string
	body    string // the answer's, when it was not a 200
}

// tagged sends one tagged chat call and tells what came back.
func tagged(c *http.Client, url string) outcome {
	n := requestSeq.Add(1)
	body := strings.Replace(chatTemplate, "benchmarks", fmt.Sprintf("benchmarks (%d)", n), 1)
	o := outcome{tag: n}
	t := time.Now()
	res, err := post(c, url, body)
	if err != nil {
		o.latency, o.body = time.Since(t), err.Error()
		return o
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	o.latency, o.status, o.runID = time.Since(t), res.StatusCode, res.Header.Get("x-svc-run-id")
	if res.StatusCode != http.StatusOK {
		o.body = string(b)
	}
	return o
}

// openLoopTagged sends rate tagged calls a second for d, each at its time,
// and returns every outcome, its latency measured from its scheduled start.
func openLoopTagged(c *http.Client, url string, rate int, d time.Duration) []outcome {
	n := int(float64(rate) * d.Seconds())
	interval := time.Second / time.Duration(rate)
	out := make([]outcome, n)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		at := start.Add(time.Duration(i) * interval)
		time.Sleep(time.Until(at))
		wg.Go(func() {
			out[i] = tagged(c, url)
			out[i].latency = time.Since(at)
		})
	}
	wg.Wait()
	return out
}

// chaosResult is what the chaos case measured in one mode.
type chaosResult struct {
	mode                 string
	calls, clientErrors  int
	directP99, svcP99    time.Duration
	bound                time.Duration // the timeout plus 50 ms
	retried              int           // calls that took more than one attempt
	checked, mismatched  int           // runs read back, and those whose attempts differ from the upstreams' count
	downCalls, downGood  int           // both providers down: calls, and those answered as they should be
	downBudget, downSlow time.Duration // the budget, and the slowest of those calls
	notes                []string
}

func (r chaosResult) ok() bool {
	return r.clientErrors == 0 && r.svcP99-r.directP99 < r.bound && r.mismatched == 0 && r.checked > 0 &&
		r.downGood == r.downCalls && r.downSlow <= r.downBudget
}

// chaosCase runs the chaos case with svc's providers in mode: two providers
// in front of upstreams of this process, the first failing 30% of its
// calls, at o.chaosRate for o.chaosDuration; then both failing.
func chaosCase(o options, mode string) (*chaosResult, error) {
	res := &chaosResult{mode: mode, bound: o.chaosTimeout + 50*time.Millisecond}
	hang := 4 * o.chaosTimeout // past the timeout, and over soon when svc stays (it should not)
	primary, err := startChaos(behaveFlaky, o.latency, hang)
	if err == nil && o.chaosRetryAfter > 0 {
		primary.retryAfter = strconv.Itoa(o.chaosRetryAfter)
	}
	if err != nil {
		return nil, err
	}
	defer primary.close()
	secondary, err := startChaos(behaveNormal, o.latency, hang)
	if err != nil {
		return nil, err
	}
	defer secondary.close()
	file := chaosProviders(mode, primary.url, secondary.url, o.chaosTimeout)
	svc, err := startSVC(o, secondary.url, &file)
	if err != nil {
		return nil, err
	}
	defer svc.stop()
	if !svc.readsProvidersFile() {
		return nil, fmt.Errorf("this svc reads no providers file (SVC_PROVIDERS_FILE)")
	}

	// Direct calls to the healthy upstream and calls through svc, in turns
	// of a second, so that the machine's load falls on both alike.
	direct, gateway := secondary.url+"/chat/completions", svc.url+"/v1/chat/completions"
	var d, s []outcome
	dc, sc := client(4096), client(4096)
	for left := o.chaosDuration; left > 0; left -= time.Second {
		turn := min(left, time.Second)
		d = append(d, openLoopTagged(dc, direct, o.chaosRate, turn)...)
		s = append(s, openLoopTagged(sc, gateway, o.chaosRate, turn)...)
	}
	res.calls = len(s)
	var failed []outcome
	for _, c := range s {
		if c.status != http.StatusOK {
			res.clientErrors++
			failed = append(failed, c)
		}
		if primary.callsOf(c.tag)+secondary.callsOf(c.tag) > 1 {
			res.retried++
		}
	}
	for _, c := range failed[:min(3, len(failed))] {
		res.notes = append(res.notes, fmt.Sprintf("call %d answered %d: %s", c.tag, c.status, strings.TrimSpace(c.body)))
	}
	res.directP99, res.svcP99 = p99(d), p99(s)

	// Every attempt is on its run: the runs' attempts against the calls
	// the upstreams counted, for a sample weighted to calls that retried.
	for _, c := range pick(s, o.chaosSample, func(c outcome) bool {
		return primary.callsOf(c.tag)+secondary.callsOf(c.tag) > 1
	}) {
		attempts, err := svc.attempts(c.runID)
		if err != nil {
			return nil, fmt.Errorf("run %s: %w", c.runID, err)
		}
		res.checked++
		if want := primary.callsOf(c.tag) + secondary.callsOf(c.tag); attempts != want {
			res.mismatched++
			if res.mismatched <= 3 {
				res.notes = append(res.notes, fmt.Sprintf("run %s: %d attempts recorded, the upstreams saw %d calls", c.runID, attempts, want))
			}
		}
	}

	if err := bothDown(o, mode, res); err != nil {
		return nil, err
	}
	return res, nil
}

// bothDown calls svc with both providers failing, the first by hanging
// past the timeout and the second with 503s: each call must be a 502
// naming the attempts, within the budget of its attempts.
func bothDown(o options, mode string, res *chaosResult) error {
	hang := 4 * o.chaosTimeout
	primary, err := startChaos(behaveDownHang, o.latency, hang)
	if err != nil {
		return err
	}
	defer primary.close()
	secondary, err := startChaos(behaveDown5xx, o.latency, hang)
	if err != nil {
		return err
	}
	defer secondary.close()
	file := chaosProviders(mode, primary.url, secondary.url, o.chaosTimeout)
	res.downBudget = file.budget(o.chaosTimeout) + 50*time.Millisecond
	svc, err := startSVC(o, secondary.url, &file)
	if err != nil {
		return err
	}
	defer svc.stop()
	c := client(4)
	for range o.chaosDown {
		got := tagged(c, svc.url+"/v1/chat/completions")
		res.downCalls++
		res.downSlow = max(res.downSlow, got.latency)
		if problem := downProblem(got); problem != "" {
			if len(res.notes) < 6 {
				res.notes = append(res.notes, fmt.Sprintf("both down, call %d: %s", got.tag, problem))
			}
			continue
		}
		res.downGood++
	}
	return nil
}

// downProblem says what is wrong with a call's answer when every provider
// failed, or "" when it is the 502 it should be.
func downProblem(o outcome) string {
	if o.status != http.StatusBadGateway {
		return fmt.Sprintf("answered %d, not 502: %s", o.status, strings.TrimSpace(o.body))
	}
	var body struct {
		Error struct {
			Message string `json:"message"`
			Code    string `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(o.body), &body); err != nil {
		return "the 502's body is not an error: " + err.Error()
	}
	m := body.Error.Message
	if body.Error.Code != "providers_failed" || !strings.Contains(m, "primary") || !strings.Contains(m, "secondary") {
		return fmt.Sprintf("the 502 does not name the attempts: code %q, message %q", body.Error.Code, m)
	}
	return ""
}

// pick picks up to n of calls answered with a run: first those that
// matter (in order), then the others, evenly spread.
func pick(calls []outcome, n int, matters func(outcome) bool) []outcome {
	var first, rest []outcome
	for _, c := range calls {
		switch {
		case c.runID == "":
		case matters(c):
			first = append(first, c)
		default:
			rest = append(rest, c)
		}
	}
	first = first[:min(len(first), n/2)]
	picked := first
	if left := n - len(first); left > 0 && len(rest) > 0 {
		step := max(1, len(rest)/left)
		for i := 0; i < len(rest) && len(picked) < n; i += step {
			picked = append(picked, rest[i])
		}
	}
	return picked
}

func p99(calls []outcome) time.Duration {
	if len(calls) == 0 {
		return 0
	}
	lat := make([]time.Duration, len(calls))
	for i, c := range calls {
		lat[i] = c.latency
	}
	slices.Sort(lat)
	return lat[int(float64(len(lat)-1)*0.99)]
}

// attempts reads a run back and counts the provider attempts its route
// explanation records.
func (p *svcProcess) attempts(runID string) (int, error) {
	res, err := http.Get(p.url + "/api/v1/runs/" + runID)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET /api/v1/runs/%s answered %s", runID, res.Status)
	}
	var d struct {
		Run struct {
			RouteExplanation struct {
				Attempts []json.RawMessage `json:"attempts"`
			} `json:"routeExplanation"`
		} `json:"run"`
	}
	if err := json.NewDecoder(res.Body).Decode(&d); err != nil {
		return 0, err
	}
	return len(d.Run.RouteExplanation.Attempts), nil
}

// printChaos prints the chaos case's table.
func printChaos(o options, results []*chaosResult) {
	retryAfter := "no Retry-After"
	if o.chaosRetryAfter > 0 {
		retryAfter = "Retry-After: " + strconv.Itoa(o.chaosRetryAfter)
	}
	fmt.Printf("\nchaos: primary fails 30%% of calls (10%% 503, 10%% 429 %s, 10%% hang), secondary healthy; "+
		"route primary → secondary, timeout %v, %d attempts; %d/s for %v\n", retryAfter, o.chaosTimeout, chaosRetries.MaxAttempts, o.chaosRate, o.chaosDuration)
	fmt.Printf("  %-11s %-8s %-14s %-26s %-10s %-18s %-30s %s\n", "mode", "calls", "client errors", "added p99 (bound)", "retried",
		"runs checked", "both down: 502s (slowest/budget)", "verdict")
	for _, r := range results {
		verdict := "ok"
		if !r.ok() {
			verdict = "FAILED"
		}
		fmt.Printf("  %-11s %-8d %-14d %-26s %-10d %-18s %-30s %s\n", r.mode, r.calls, r.clientErrors,
			fmt.Sprintf("%s (< %s)", ms(r.svcP99-r.directP99), ms(r.bound)), r.retried,
			fmt.Sprintf("%d, %d differ", r.checked, r.mismatched),
			fmt.Sprintf("%d of %d (%s / %s)", r.downGood, r.downCalls, ms(r.downSlow), ms(r.downBudget)), verdict)
		for _, n := range r.notes {
			fmt.Println("    " + n)
		}
	}
}
