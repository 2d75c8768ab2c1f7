// Command svc-bench measures what svc costs in front of a provider: the
// latency it adds at a fixed request rate (chat completions; embeddings and
// the Responses API at the first rate), the delay it adds to the first
// streamed byte, its closed-loop throughput with every run recorded, the
// memory of svc and its provider plugin, and the CPU time a call its
// metrics and its tracing add (observability.go), and the closed-loop
// throughput of one svc on SQLite beside one and three on PostgreSQL
// (replicas.go).
//
// Everything runs on 127.0.0.1: an OpenAI-compatible upstream with a fixed
// latency (in this process), bin/svc in front of it through the
// provider-openai plugin (a child process), and a load generator. Each
// figure is measured against the upstream called directly, at the same
// rate, by the same generator, so that the difference is svc's own.
//
// For scale, the same generator also measures two bare relays in a chain
// (this program run with -relay, twice): Go reverse proxies that do nothing
// but pass bytes, in the places of svc and its plugin. What they add is what
// two process hops cost on this machine before any work is done.
//
//	make build && go run ./cmd/svc-bench            # or: make bench
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	var o options
	flag.StringVar(&o.svc, "svc", "bin/svc", "the svc binary")
	flag.StringVar(&o.plugins, "plugins", "bin/plugins", "the plugin folder")
	flag.StringVar(&o.rates, "rates", "100,1000", "open-loop request rates (req/s), comma-separated")
	flag.DurationVar(&o.duration, "duration", 5*time.Second, "length of each measured phase")
	flag.DurationVar(&o.latency, "latency", 10*time.Millisecond, "the upstream's fixed latency in the open-loop phases")
	flag.IntVar(&o.conns, "conns", 10, "connections of the observability and replicas phases' closed loops")
	flag.StringVar(&o.closedConns, "closed-conns", "1,4,10,32", "the closed-loop phase's connections, comma-separated: one closed loop each")
	flag.IntVar(&o.streams, "streams", 300, "sequential streams for time to first byte")
	flag.StringVar(&o.cpuprofile, "cpuprofile", "", "write svc's CPU profile of the closed-loop phase to this file (with several loops, one file each: name.c<conns>.ext; with two modes, one each: name[.c<conns>].<mode>.ext)")
	flag.StringVar(&o.svcLog, "svc-log", "", "also append svc's standard error (its log; the runtime's, with -env GODEBUG=gctrace=1) to this file")
	flag.StringVar(&o.phases, "phases", strings.Join(phaseNames, ","), "the phases to run, comma-separated (none: \"\")")
	flag.StringVar(&o.mode, "mode", "", "the providers' mode: plugin, in_process or both (default: both when this svc reads a providers file, else plugin)")
	flag.BoolVar(&o.chaos, "chaos", false, "also run the chaos case: two providers, the first failing 30% of calls; then both down")
	flag.IntVar(&o.chaosRate, "chaos-rate", 200, "the chaos case's request rate (req/s)")
	flag.DurationVar(&o.chaosDuration, "chaos-duration", 60*time.Second, "the chaos case's length")
	flag.DurationVar(&o.chaosTimeout, "chaos-timeout", 200*time.Millisecond, "each provider's timeout in the chaos case")
	flag.IntVar(&o.chaosSample, "chaos-sample", 200, "runs of the chaos case read back to check their attempts")
	flag.IntVar(&o.obsRequests, "obs-requests", 20000, "calls to each configuration of the observability phase, warm-up aside")
	flag.IntVar(&o.obsRounds, "obs-rounds", 10, "rounds the observability phase's calls are made in, each configuration in turn")
	flag.IntVar(&o.obsRate, "obs-rate", 0, "the observability phase's calls sent at this fixed rate (req/s) rather than in a closed loop, so that every configuration does the same work a second")
	flag.IntVar(&o.chaosDown, "chaos-down", 20, "calls made with both providers down")
	flag.IntVar(&o.chaosRetryAfter, "chaos-retry-after", 1, "the Retry-After (whole seconds) of the failing provider's 429s; 0 sends none, so that its failures keep reaching it")
	relayTo := flag.String("relay", "", "serve as a bare relay to this `URL`, printing the relay's own URL (used by the benchmark itself)")
	recordCalls := flag.Bool("record", false, "with -relay: decode each call and its answer and journal them before answering (used by the benchmark itself)")
	spansTo := flag.String("spans", "", "make a call's spans, exported to this OTLP/HTTP `URL`, as many calls as each line of the input says, at -obs-rate (used by the benchmark itself)")
	makeSpans := flag.Bool("spans-make", true, "with -spans: make the spans; false only keeps the pace")
	flag.Func("env", "`KEY=VALUE` added to svc's environment, to compare settings (repeatable)", func(kv string) error {
		if !strings.Contains(kv, "=") {
			return fmt.Errorf("%q is not KEY=VALUE", kv)
		}
		o.env = append(o.env, kv)
		return nil
	})
	flag.Parse()
	if *relayTo != "" {
		if err := serveRelay(*relayTo, *recordCalls); err != nil {
			fmt.Fprintln(os.Stderr, "svc-bench relay:", err)
			os.Exit(1)
		}
		return
	}
	if *spansTo != "" {
		if err := serveSpans(*spansTo, o.obsRate, *makeSpans, os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "svc-bench spans:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "svc-bench:", err)
		os.Exit(1)
	}
}

type options struct {
	svc, plugins, rates string
	closedConns         string
	duration, latency   time.Duration
	conns, streams      int
	cpuprofile, phases  string
	svcLog              string
	mode                string
	chaos               bool
	chaosRate           int
	chaosDuration       time.Duration
	chaosTimeout        time.Duration
	chaosRetryAfter     int
	chaosSample         int
	chaosDown           int
	obsRequests         int
	obsRounds           int
	obsRate             int
	env                 []string
}

// phaseNames are the phases -phases may name, in the order they run.
var phaseNames = []string{"latency", "endpoints", "streaming", "closed", "observability", "replicas"}

// ownPhases start svcs of their own rather than measure the targets.
var ownPhases = []string{"observability", "replicas"}

// chatBody is a request none before it asked, so that svc's exact cache
// misses (and pays for its lookup) like it would for fresh traffic: the
// benchmark measures the path to the provider.
func chatBody() string {
	return strings.Replace(chatTemplate, "benchmarks", fmt.Sprintf("benchmarks (%d)", requestSeq.Add(1)), 1)
}

// embeddingsBody is an embeddings request of two texts, each new, so that
// svc's exact cache never answers it.
func embeddingsBody() string {
	n := requestSeq.Add(1)
	return fmt.Sprintf(`{"model":"text-embedding-3-small","input":["benchmarks (%d) measure what matters","an unrelated sentence (%d)"]}`, n, n)
}

// responsesBody is the Responses API's form of chatBody's request.
func responsesBody() string {
	return fmt.Sprintf(`{"model":"gpt-4o-mini","instructions":"You are a helpful assistant.",`+
		`"input":"Write one sentence about benchmarks (%d)."}`, requestSeq.Add(1))
}

// bodyFor is the request the load generator sends to url, by its path.
func bodyFor(url string) string {
	switch {
	case strings.HasSuffix(url, "/embeddings"):
		return embeddingsBody()
	case strings.HasSuffix(url, "/responses"):
		return responsesBody()
	}
	return chatBody()
}

var requestSeq atomic.Int64

// benchModel is the model every chat request names.
const benchModel = "gpt-4o-mini"

const chatTemplate = `{"model":"gpt-4o-mini","messages":[{"role":"system","content":"You are a helpful assistant."},` +
	`{"role":"user","content":"Write one sentence about benchmarks."}]}`

// target is one svc the benchmark measures: its providers in one mode.
type target struct {
	mode string
	svc  *svcProcess
}

func (t target) chat() string { return t.svc.url + "/v1/chat/completions" }

// summary is what the final table shows of one mode.
type summary struct {
	mode              string
	addedP50, overOne time.Duration // at the first rate: added p50, and its excess over one bare relay
	// overRecording is svc's p50 over the recording relay's at the first
	// rate, and recordingOverOne the recording relay's over the bare one's.
	overRecording, recordingOverOne time.Duration
	addedP99, overTwo               time.Duration // at the last rate: added p99, and its excess over two bare relays
	firstRate, lastRate             int
	closed                          []closedFigures // one for each of -closed-conns
}

func run(o options) error {
	rates, err := positiveInts("-rates", o.rates)
	if err != nil {
		return err
	}
	loads, err := positiveInts("-closed-conns", o.closedConns)
	if err != nil {
		return err
	}
	if o.chaosRate <= 0 || o.chaosDuration <= 0 || o.chaosTimeout <= 0 {
		return fmt.Errorf("-chaos-rate, -chaos-duration and -chaos-timeout must be positive")
	}
	if err := o.checkPhases(); err != nil {
		return err
	}
	up, err := startUpstream()
	if err != nil {
		return err
	}
	defer up.close()
	if o.measuresTargets() {
		if err := targetPhases(o, rates, loads, up); err != nil {
			return err
		}
	}
	if o.has("observability") {
		// Closed loop, like the closed phase: CPU-bound, so that it is short.
		up.latency.Store(0)
		if err := observabilityPhase(o, up); err != nil {
			return err
		}
	}
	if o.has("replicas") {
		up.latency.Store(0)
		if err := replicasPhase(o, up); err != nil {
			return err
		}
	}
	return nil
}

// checkPhases refuses a phase -phases names that does not exist, which
// would otherwise be a run that silently measures less.
func (o options) checkPhases() error {
	for _, p := range strings.Split(o.phases, ",") {
		if p = strings.TrimSpace(p); p != "" && !slices.Contains(phaseNames, p) {
			return fmt.Errorf("-phases: no phase %q (the phases: %s)", p, strings.Join(phaseNames, ", "))
		}
	}
	return nil
}

// positiveInts parses a flag's comma-separated list of positive integers.
func positiveInts(flagName, list string) ([]int, error) {
	var ns []int
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%s: %q is not a positive whole number", flagName, f)
		}
		ns = append(ns, n)
	}
	return ns, nil
}

// measuresTargets says whether the run measures svc in each mode beside
// the relays: every run but one of only the phases that start svcs of
// their own.
func (o options) measuresTargets() bool {
	return o.chaos || !slices.ContainsFunc(ownPhases, o.has) || slices.ContainsFunc(phaseNames, func(p string) bool {
		return !slices.Contains(ownPhases, p) && o.has(p)
	})
}

// targetPhases are the phases that measure svc in each mode against the
// upstream called directly and the bare relays, then the chaos case, then
// the memory of each svc.
func targetPhases(o options, rates, loads []int, up *upstream) error {
	targets, files, err := startTargets(o, up.url)
	for _, t := range targets {
		defer t.svc.stop()
	}
	if err != nil {
		return err
	}
	one, err := startRelays(up.url, 1, false)
	if err != nil {
		return err
	}
	defer one.stop()
	two, err := startRelays(up.url, 2, false)
	if err != nil {
		return err
	}
	defer two.stop()
	rec, err := startRelays(up.url, 1, true)
	if err != nil {
		return err
	}
	defer rec.stop()

	direct := up.url + "/chat/completions"
	fmt.Printf("svc-bench: upstream latency %v, phases of %v, GOMAXPROCS from the machine (%d CPUs), modes %s\n\n",
		o.latency, o.duration, numCPU(), modeNames(targets))

	// Warm svc's path and the relays': connections, the plugin, SQLite's pages.
	up.latency.Store(int64(o.latency))
	warm := []string{one.url + "/chat/completions", two.url + "/chat/completions", rec.url + "/chat/completions"}
	for _, t := range targets {
		warm = append(warm, t.chat())
	}
	for _, url := range warm {
		if _, err := openLoop(client(4096), url, 200, time.Second); err != nil {
			return err
		}
	}

	sums := make([]summary, len(targets))
	for i, t := range targets {
		sums[i].mode = t.mode
	}
	if o.has("latency") {
		if err := latencyPhase(o, rates, up, targets, one, two, rec, sums); err != nil {
			return err
		}
	}
	for _, t := range targets {
		if o.has("endpoints") {
			if err := endpointsPhase(t, rates[0], o.duration, up, two); err != nil {
				return err
			}
		}
		if o.has("streaming") {
			if err := streamingPhase(t, o.streams, direct, two.url+"/chat/completions"); err != nil {
				return err
			}
		}
	}
	if o.has("closed") {
		up.latency.Store(0)
		if err := closedPhase(o, loads, direct, targets, sums); err != nil {
			return err
		}
		up.latency.Store(int64(o.latency))
	}
	if o.has("closed") || o.has("latency") {
		printSummary(o, sums)
	}

	var chaos []*chaosResult
	if o.chaos {
		if !files {
			fmt.Println("\nchaos: not run: this svc reads no providers file (SVC_PROVIDERS_FILE)")
		}
		for _, t := range targets {
			if !files {
				break
			}
			r, err := chaosCase(o, t.mode)
			if err != nil {
				return fmt.Errorf("chaos (%s): %w", t.mode, err)
			}
			chaos = append(chaos, r)
		}
		if len(chaos) > 0 {
			printChaos(o, chaos)
		}
	}

	fmt.Println("\nmemory after the run")
	for _, t := range targets {
		for _, p := range t.svc.processes() {
			rss, hwm := memory(p.pid)
			fmt.Printf("  %-11s %-22s RSS %6.1f MB   peak %6.1f MB\n", t.mode, p.name, rss, hwm)
		}
	}
	for _, r := range chaos {
		if !r.ok() {
			return fmt.Errorf("the chaos case failed in %s mode", r.mode)
		}
	}
	return nil
}

// startTargets starts an svc for each mode -mode asks for: plugin mode as
// the environment configures it (today's svc), in-process mode through a
// providers file. Without -mode, in-process mode is measured when this svc
// reads a providers file, which is found out by trying; files says
// whether it does.
func startTargets(o options, upstream string) (targets []target, files bool, err error) {
	var modes []string
	switch o.mode {
	case "", "both":
		modes = []string{modePlugin, modeInProcess}
	case modePlugin, modeInProcess:
		modes = []string{o.mode}
	default:
		return nil, false, fmt.Errorf("-mode %q: want plugin, in_process or both", o.mode)
	}
	for _, mode := range modes {
		var file *providersFile
		if mode == modeInProcess {
			f := singleProvider(mode, upstream)
			file = &f
		}
		p, err := startSVC(o, upstream, file)
		if err != nil && file != nil && o.mode == "" {
			// An svc that reads providers files but cannot run this
			// provider in process refuses the file at start.
			fmt.Printf("note: in-process mode not measured: %v\n", err)
			continue
		}
		if err != nil {
			return targets, files, err
		}
		if file != nil {
			files = p.providersFile
		}
		if file != nil && !p.providersFile {
			p.stop()
			if o.mode != "" {
				return targets, false, fmt.Errorf("-mode %s: this svc reads no providers file (SVC_PROVIDERS_FILE)", o.mode)
			}
			fmt.Println("note: this svc reads no providers file (SVC_PROVIDERS_FILE): plugin mode only")
			continue
		}
		targets = append(targets, target{mode: mode, svc: p})
	}
	if o.chaos && !files {
		// Plugin mode as the environment configures it says nothing of
		// the providers file the chaos case needs (nor an svc that
		// refused an in-process provider): ask an svc given one.
		f := singleProvider(modePlugin, upstream)
		p, err := startSVC(o, upstream, &f)
		if err != nil {
			return targets, false, err
		}
		files = p.providersFile
		p.stop()
	}
	return targets, files, nil
}

func modeNames(targets []target) string {
	names := make([]string, len(targets))
	for i, t := range targets {
		names[i] = t.mode
	}
	return strings.Join(names, ", ")
}

// has reports whether -phases names phase.
func (o options) has(phase string) bool {
	return slices.ContainsFunc(strings.Split(o.phases, ","), func(p string) bool { return strings.TrimSpace(p) == phase })
}

// latencyPhase measures, at each rate, the upstream called directly, each
// svc, one bare relay and two in a chain, in turns, so that the floors are
// those of the same run.
func latencyPhase(o options, rates []int, up *upstream, targets []target, one, two, rec *relayChain, sums []summary) error {
	direct := up.url + "/chat/completions"
	fmt.Println("latency added by svc (open loop, same rate, minus direct; one bare relay and two in a chain are the floors,")
	fmt.Println("and one recording relay the floor of a gateway that decodes and journals every call before it answers)")
	var cpuLines []string
	for ri, rate := range rates {
		urls := []string{direct}
		for _, t := range targets {
			urls = append(urls, t.chat())
		}
		urls = append(urls, one.url+"/chat/completions", two.url+"/chat/completions", rec.url+"/chat/completions")
		// Each svc works only in its turns: its CPU over the phase is what
		// its requests cost at this rate.
		procs := make([][]namedPID, len(targets))
		before := make([][]time.Duration, len(targets))
		for i, t := range targets {
			procs[i] = t.svc.processes()
			before[i] = cpuTimes(procs[i])
		}
		got, err := interleaved(urls, rate, o.duration)
		if err != nil {
			return err
		}
		d, r1, r2, rr := got[0], got[len(got)-3], got[len(got)-2], got[len(got)-1]
		fmt.Printf("  %d/s         %-20s %-20s %s\n", rate, "p50 / p99", "added p50 / p99", "errors")
		row := func(name string, s *sample) {
			fmt.Printf("    %-14s %-20s %-20s %d\n", name, pair(s.p(50), s.p(99)), pair(s.p(50)-d.p(50), s.p(99)-d.p(99)), s.errors)
		}
		row("direct", d)
		for i, t := range targets {
			s := got[1+i]
			row("svc "+t.mode, s)
			cpuLines = append(cpuLines, fmt.Sprintf("  %-8s %-11s %s", fmt.Sprintf("%d/s", rate), t.mode, cpuPerRequest(procs[i], before[i], s.ok)))
			if ri == 0 {
				sums[i].firstRate = rate
				sums[i].addedP50, sums[i].overOne = s.p(50)-d.p(50), s.p(50)-r1.p(50)
				sums[i].overRecording, sums[i].recordingOverOne = s.p(50)-rr.p(50), rr.p(50)-r1.p(50)
			}
			if ri == len(rates)-1 {
				sums[i].lastRate = rate
				sums[i].addedP99, sums[i].overTwo = s.p(99)-d.p(99), s.p(99)-r2.p(99)
			}
		}
		row("1 bare relay", r1)
		row("2 bare relays", r2)
		row("1 recording", rr)
	}
	fmt.Println("  CPU per request at that rate")
	for _, l := range cpuLines {
		fmt.Println(l)
	}
	return nil
}

func endpointsPhase(t target, rate int, duration time.Duration, up *upstream, relays *relayChain) error {
	direct := up.url + "/chat/completions"
	// The other endpoints at the first rate: the direct call is the
	// upstream's own endpoint (for Responses, the chat completion svc
	// translates it to); an endpoint this svc does not serve is said so.
	fmt.Printf("\nother endpoints, %s (open loop at %d/s, svc minus direct; relays for scale)\n", t.mode, rate)
	for _, e := range []struct{ name, direct, svc string }{
		{"embeddings", up.url + "/embeddings", t.svc.url + "/v1/embeddings"},
		{"responses", direct, t.svc.url + "/v1/responses"},
	} {
		if err := call(client(1), e.svc); err != nil {
			fmt.Printf("  %-12s not measured: %v\n", e.name, err)
			continue
		}
		procs := t.svc.processes()
		before := cpuTimes(procs)
		relay := relays.url + strings.TrimPrefix(e.direct, up.url)
		got, err := interleaved([]string{e.direct, e.svc, relay}, rate, duration)
		if err != nil {
			return err
		}
		d, s, r := got[0], got[1], got[2]
		fmt.Printf("  %-12s added p50 / p99 %-20s relays add %-20s errors %d; CPU per request: %s\n", e.name,
			pair(s.p(50)-d.p(50), s.p(99)-d.p(99)), pair(r.p(50)-d.p(50), r.p(99)-d.p(99)), d.errors+s.errors+r.errors,
			cpuPerRequest(procs, before, s.ok))
	}
	return nil
}

func streamingPhase(t target, streams int, direct, bare string) error {
	fmt.Printf("\nstreaming, %s: time to first byte (sequential streams, direct, svc and the relays in turn)\n", t.mode)
	d, s, r, sc := &sample{}, &sample{}, &sample{}, client(1)
	procs := t.svc.processes()
	streamCPU := cpuTimes(procs)
	for range streams {
		if err := firstByte(sc, direct, d); err != nil {
			return err
		}
		if err := firstByte(sc, t.chat(), s); err != nil {
			return err
		}
		if err := firstByte(sc, bare, r); err != nil {
			return err
		}
	}
	fmt.Printf("  direct p50 %s   svc p50 %s   added p50 %s (p99 %s)   relays add p50 %s (p99 %s)\n", ms(d.p(50)), ms(s.p(50)),
		ms(s.p(50)-d.p(50)), ms(s.p(99)-d.p(99)), ms(r.p(50)-d.p(50)), ms(r.p(99)-d.p(99)))
	fmt.Printf("  CPU per stream: %s\n", cpuPerRequest(procs, streamCPU, len(s.lat)))
	return nil
}

// printSummary is the targets' figures, each mode's against the floors of
// the same run.
func printSummary(o options, sums []summary) {
	fmt.Println("\nsummary (floors from the same run)")
	var plugin, inProcess *summary
	for i, s := range sums {
		switch s.mode {
		case modePlugin:
			plugin = &sums[i]
		case modeInProcess:
			inProcess = &sums[i]
		}
	}
	if o.has("latency") {
		fmt.Printf("  %-11s %-30s %s\n", "mode", "added p50 (over 1 relay)", "added p99 (over 2 relays)")
		for _, s := range sums {
			fmt.Printf("  %-11s %-30s %s\n", s.mode,
				fmt.Sprintf("%s (%+.3f) at %d/s", ms(s.addedP50), float64(s.overOne)/1e6, s.firstRate),
				fmt.Sprintf("%s (%+.3f) at %d/s", ms(s.addedP99), float64(s.overTwo)/1e6, s.lastRate))
		}
		fmt.Printf("  the recording relay's p50 over the bare relay's at %d/s: %+.3f ms\n", sums[0].firstRate, float64(sums[0].recordingOverOne)/1e6)
		for _, s := range sums {
			fmt.Printf("  %-11s p50 over the recording relay's: %+.3f ms\n", s.mode, float64(s.overRecording)/1e6)
		}
	}
	if !o.has("closed") {
		return
	}
	if plugin == nil || inProcess == nil {
		for _, s := range sums {
			for _, c := range s.closed {
				fmt.Printf("  %-11s closed loop of %d connections: %.0f req/s\n", s.mode, c.conns, c.throughput)
			}
		}
		return
	}
	fmt.Println("  closed loop, in_process / plugin, at each number of connections:")
	fmt.Println("    the throughputs' ratio (round by round: median ± half the interquartile range);")
	fmt.Println("    CPU per request, plugin / in_process, of every process, and of svc and its plugins;")
	fmt.Println("    the ceiling: the ratio were the plugin's CPU gone and svc's as in plugin mode")
	for k := range min(len(plugin.closed), len(inProcess.closed)) {
		p, ip := plugin.closed[k], inProcess.closed[k]
		if p.throughput <= 0 || ip.throughput <= 0 {
			continue
		}
		fmt.Printf("    %3d: %.2f×", p.conns, ip.throughput/p.throughput)
		if r := turnRatios(p.turnRates, ip.turnRates); len(r) > 1 {
			// The host's other load moves from turn to turn: the ratios of
			// the rounds say how far the one above can be trusted.
			fmt.Printf(" (%.2f× ± %.2f over %d rounds)", median(r), spread(r), len(r))
		}
		fmt.Printf("; CPU %s, %s; ceiling %.2f×\n", cpuRatio(p.machineCPU, ip.machineCPU), cpuRatio(p.gatewayCPU, ip.gatewayCPU), p.ceiling())
	}
}

func numCPU() int {
	b, _ := os.ReadFile("/proc/cpuinfo")
	return bytes.Count(b, []byte("processor\t:"))
}

func ms(d time.Duration) string { return fmt.Sprintf("%.3f ms", float64(d)/float64(time.Millisecond)) }

func pair(a, b time.Duration) string {
	return fmt.Sprintf("%.3f / %.3f ms", float64(a)/1e6, float64(b)/1e6)
}

// sample is a phase's latencies.
type sample struct {
	lat    []time.Duration
	errors int
	ok     int
	rate   float64
}

func (s *sample) p(q float64) time.Duration {
	if len(s.lat) == 0 {
		return 0
	}
	slices.Sort(s.lat)
	i := int(float64(len(s.lat)-1) * q / 100)
	return s.lat[i]
}

// client keeps up to conns connections to each host, all of them reused:
// no total limit, which would close one host's idle connection for
// another's when a client measures several in turn.
func client(conns int) *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns,
		IdleConnTimeout: time.Minute, DisableCompression: true,
	}}
}

func post(c *http.Client, url, body string) (*http.Response, error) {
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	return c.Do(req)
}

func call(c *http.Client, url string) error {
	res, err := post(c, url, bodyFor(url))
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", res.StatusCode)
	}
	return err
}

// interleaved measures each of urls at rate for d in all, in turns of a
// second each, so that a change in the machine's other load (a neighbour on
// the host, a daemon waking) falls on all rather than on one.
func interleaved(urls []string, rate int, d time.Duration) ([]*sample, error) {
	samples, clients := make([]*sample, len(urls)), make([]*http.Client, len(urls))
	for i := range urls {
		samples[i], clients[i] = &sample{}, client(4096)
	}
	for left := d; left > 0; left -= time.Second {
		turn := min(left, time.Second)
		for i, url := range urls {
			got, err := openLoop(clients[i], url, rate, turn)
			if err != nil {
				return nil, err
			}
			s := samples[i]
			s.lat = append(s.lat, got.lat...)
			s.errors += got.errors
			s.ok += got.ok
		}
	}
	return samples, nil
}

// openLoop sends rate requests a second for d, each at its scheduled time
// whatever the others are doing, and measures each from its scheduled
// start, so that a stall is counted against every request it delays.
func openLoop(c *http.Client, url string, rate int, d time.Duration) (*sample, error) {
	n := int(float64(rate) * d.Seconds())
	interval := time.Second / time.Duration(rate)
	lat := make([]time.Duration, n)
	var errs atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		at := start.Add(time.Duration(i) * interval)
		time.Sleep(time.Until(at))
		wg.Go(func() {
			if err := call(c, url); err != nil {
				errs.Add(1)
			}
			lat[i] = time.Since(at)
		})
	}
	wg.Wait()
	if e := errs.Load(); e > int64(n)/100 {
		return nil, fmt.Errorf("%s at %d/s: %d of %d requests failed", url, rate, e, n)
	}
	return &sample{lat: lat, errors: int(errs.Load()), ok: n - int(errs.Load())}, nil
}

// closedLoop keeps conns requests in flight for d.
func closedLoop(url string, conns int, d time.Duration) (*sample, error) {
	return closedLoopOver([]string{url}, conns, d)
}

// closedLoopOver keeps conns requests in flight for d, connection w
// sending to urls[w % len(urls)], as a balancer spreading connections
// would.
func closedLoopOver(urls []string, conns int, d time.Duration) (*sample, error) {
	return closedLoopWith(client(conns), urls, conns, d)
}

// closedLoopWith is closedLoopOver through c, whose connections a run
// before it may have opened.
func closedLoopWith(c *http.Client, urls []string, conns int, d time.Duration) (*sample, error) {
	deadline := time.Now().Add(d)
	results := make([]sample, conns)
	var wg sync.WaitGroup
	start := time.Now()
	for w := range conns {
		wg.Go(func() {
			r, url := &results[w], urls[w%len(urls)]
			for time.Now().Before(deadline) {
				t := time.Now()
				if err := call(c, url); err != nil {
					r.errors++
					continue
				}
				r.ok++
				r.lat = append(r.lat, time.Since(t))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	var all sample
	for _, r := range results {
		all.lat = append(all.lat, r.lat...)
		all.ok += r.ok
		all.errors += r.errors
	}
	all.rate = float64(all.ok) / elapsed.Seconds()
	if all.ok == 0 {
		return nil, fmt.Errorf("%s: no request succeeded", strings.Join(urls, ", "))
	}
	return &all, nil
}

// firstByte times one streamed call, from sending to the first body byte,
// into s.
func firstByte(c *http.Client, url string, s *sample) error {
	body := strings.Replace(chatBody(), `{"model"`, `{"stream":true,"model"`, 1)
	t := time.Now()
	res, err := post(c, url, body)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	one := make([]byte, 1)
	if _, err := io.ReadFull(res.Body, one); err != nil {
		return fmt.Errorf("%s: stream: %w", url, err)
	}
	s.lat = append(s.lat, time.Since(t))
	_, _ = io.Copy(io.Discard, res.Body)
	return nil
}

// upstream is an OpenAI-compatible chat-completions server with a fixed
// latency before its answer (before the first chunk, when streaming).
type upstream struct {
	srv     *http.Server
	url     string
	latency atomic.Int64
}

const completion = `{"id":"chatcmpl-bench","object":"chat.completion","created":1700000000,"model":"gpt-4o-mini",` +
	`"choices":[{"index":0,"message":{"role":"assistant","content":"Benchmarks measure what matters, when they are honest."},"finish_reason":"stop"}],` +
	`"usage":{"prompt_tokens":24,"completion_tokens":11,"total_tokens":35}}`

// embeddingsAnswer is two vectors of text-embedding-3-small's 1536
// dimensions, as the provider sends them by default (floats).
var embeddingsAnswer = func() string {
	var b strings.Builder
	b.WriteString(`{"object":"list","data":[`)
	for i := range 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"object":"embedding","index":%d,"embedding":[`, i)
		for j := range 1536 {
			if j > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "%.8f", float64((i*1536+j)%97-48)/1000)
		}
		b.WriteString("]}")
	}
	b.WriteString(`],"model":"text-embedding-3-small","usage":{"prompt_tokens":14,"total_tokens":14}}`)
	return b.String()
}()

var chunks = []string{
	`{"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"role":"assistant","content":"Benchmarks"}}]}`,
	`{"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":" measure what matters."}}]}`,
	`{"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
	`{"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o-mini","choices":[],"usage":{"prompt_tokens":24,"completion_tokens":5,"total_tokens":29}}`,
}

func startUpstream() (*upstream, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	u := &upstream{url: "http://" + ln.Addr().String()}
	u.srv = &http.Server{Handler: http.HandlerFunc(u.serve), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = u.srv.Serve(ln) }()
	return u, nil
}

func (u *upstream) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if d := time.Duration(u.latency.Load()); d > 0 {
		time.Sleep(d)
	}
	if strings.HasSuffix(r.URL.Path, "/embeddings") {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, embeddingsAnswer)
		return
	}
	if !bytes.Contains(body, []byte(`"stream":true`)) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, completion)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	f := w.(http.Flusher)
	for _, c := range chunks {
		_, _ = io.WriteString(w, "data: "+c+"\n\n")
		f.Flush()
	}
	_, _ = io.WriteString(w, "data: [DONE]\n\n")
}

func (u *upstream) close() { _ = u.srv.Close() }

// serveRelay passes every request to target and its answer back, flushing
// each write (streams pass event by event), until stdin closes: the least a
// Go process in svc's place could do. With record, each call is decoded
// and journaled on the way (see recording).
func serveRelay(target string, record bool) error {
	to, err := url.Parse(target)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	proxy := httputil.NewSingleHostReverseProxy(to)
	proxy.FlushInterval = -1
	proxy.Transport = &http.Transport{MaxIdleConnsPerHost: 4096, IdleConnTimeout: time.Minute, DisableCompression: true}
	var handler http.Handler = proxy
	if record {
		rec, err := newRecorder()
		if err != nil {
			return err
		}
		handler = recording(proxy, rec)
	}
	go func() { _ = http.Serve(ln, handler) }()
	fmt.Println("http://" + ln.Addr().String())
	_, _ = io.Copy(io.Discard, os.Stdin)
	return nil
}

// relayChain is bare relays in a chain before the upstream.
type relayChain struct {
	cmds []*exec.Cmd
	url  string
}

// startRelays starts n relays, each passing to the one started before it
// and the first to target; recording ones with record.
func startRelays(target string, n int, record bool) (*relayChain, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	c := &relayChain{url: target}
	for range n {
		cmd := exec.Command(self, "-relay", c.url, "-record="+strconv.FormatBool(record))
		cmd.Stderr = os.Stderr
		// stop kills the relay; its stdin closing ends it when this program
		// dies without stopping it.
		if _, err := cmd.StdinPipe(); err != nil {
			c.stop()
			return nil, err
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			c.stop()
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			c.stop()
			return nil, err
		}
		c.cmds = append(c.cmds, cmd)
		line, err := bufio.NewReader(out).ReadString('\n')
		if err != nil {
			c.stop()
			return nil, fmt.Errorf("relay did not start: %w", err)
		}
		c.url = strings.TrimSpace(line)
	}
	return c, nil
}

func (c *relayChain) stop() {
	for _, cmd := range c.cmds {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
}

// svcProcess is bin/svc running in front of the upstream.
type svcProcess struct {
	cmd       *exec.Cmd
	url       string
	dir       string
	pprofAddr string // set with -cpuprofile
	// providersFile is whether it was given a providers file and serves
	// its providers (see readsProvidersFile).
	providersFile bool
}

// profile writes svc's CPU profile over d to file.
func (p *svcProcess) profile(file string, d time.Duration) error {
	secs := max(1, int(d/time.Second)-1)
	res, err := http.Get(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", p.pprofAddr, secs))
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("profiler answered %s", res.Status)
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, res.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// startSVC starts bin/svc with its provider in front of upstreamURL, as the
// environment configures it, or as file declares when it is not nil.
func startSVC(o options, upstreamURL string, file *providersFile) (*svcProcess, error) {
	dir, err := os.MkdirTemp("", "svc-bench-")
	if err != nil {
		return nil, err
	}
	plugins, err := filepath.Abs(o.plugins)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(o.svc)
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"), "SVC_ADDR=127.0.0.1:0", "SVC_LOG_JSON=1", "SVC_LOG_LEVEL=warn",
		"SVC_DB=" + filepath.Join(dir, "svc.db"), "SVC_PLUGIN_DIR=" + plugins,
		"PROVIDER_API_KEY=sk-bench", "PROVIDER_BASE_URL=" + upstreamURL,
		"SVC_RATE_LIMIT=0",
	}
	if file != nil {
		path, err := file.write(dir)
		if err != nil {
			return nil, err
		}
		cmd.Env = append(cmd.Env, "SVC_PROVIDERS_FILE="+path)
	}
	cmd.Env = append(cmd.Env, o.env...)
	var pprofAddr string
	if o.cpuprofile != "" {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		pprofAddr = l.Addr().String()
		l.Close()
		cmd.Env = append(cmd.Env, "SVC_PPROF_ADDR="+pprofAddr)
	}
	// svc logs its address at info; at warn it says nothing, so find the
	// port by asking for one first.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd.Env[1] = "SVC_ADDR=" + addr
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if o.svcLog != "" {
		f, err := os.OpenFile(o.svcLog, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, err
		}
		defer f.Close() // the child has its own copy
		cmd.Stderr = f
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s (run `make build` first): %w", o.svc, err)
	}
	p := &svcProcess{cmd: cmd, url: "http://" + addr, dir: dir, pprofAddr: pprofAddr}
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		res, err := http.Get(p.url + "/health")
		if err == nil {
			res.Body.Close()
			p.providersFile = file != nil && p.readsProvidersFile()
			return p, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	p.stop()
	if o.svcLog != "" {
		return nil, fmt.Errorf("svc did not start (its log: %s)", o.svcLog)
	}
	return nil, fmt.Errorf("svc did not start:\n%s", stderr.String())
}

func (p *svcProcess) stop() {
	_ = p.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
	}
	_ = os.RemoveAll(p.dir)
}

func (p *svcProcess) runCount() (int, error) {
	res, err := http.Get(p.url + "/api/v1/runs?limit=1")
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	var out struct {
		Total int `json:"total"`
	}
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
		return 0, err
	}
	return out.Total, nil
}

type namedPID struct {
	name string
	pid  int
}

// processes are svc and its children (the provider plugin).
func (p *svcProcess) processes() []namedPID {
	out := []namedPID{{"svc", p.cmd.Process.Pid}}
	parent := strconv.Itoa(p.cmd.Process.Pid)
	for pid, st := range procStats() {
		if st.ppid == parent {
			out = append(out, namedPID{st.comm, pid})
		}
	}
	sort.Slice(out[1:], func(i, j int) bool { return out[1+i].pid < out[1+j].pid })
	return out
}

// cpuTimes reads the CPU time each of procs has used.
func cpuTimes(procs []namedPID) []time.Duration {
	t := make([]time.Duration, len(procs))
	for i, p := range procs {
		t[i] = cpuTime(p.pid)
	}
	return t
}

// cpuPerRequest tells the CPU time each of procs used since before, per
// request of n.
func cpuPerRequest(procs []namedPID, before []time.Duration, n int) string {
	used := make([]time.Duration, len(procs))
	for i, p := range procs {
		used[i] = cpuTime(p.pid) - before[i]
	}
	return cpuUsed(procs, used, n)
}

// cpuUsed says what CPU time each of procs used a request, of n.
func cpuUsed(procs []namedPID, used []time.Duration, n int) string {
	parts := make([]string, len(procs))
	for i, p := range procs {
		parts[i] = fmt.Sprintf("%s %.0f µs", p.name, float64(used[i].Microseconds())/float64(max(n, 1)))
	}
	return strings.Join(parts, ", ")
}

// cpuTime reads the user and system CPU time a process has used.
func cpuTime(pid int) time.Duration {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(stat)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0
	}
	// utime and stime are fields 14 and 15 of stat, in clock ticks (100 Hz
	// on Linux).
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// usage is what a process has used: its CPU time, and its read and write
// system calls (syscr and syscw of /proc/PID/io: read, pread and readv,
// and their writes, of sockets and files alike), a call's network
// exchanges and the database's page writes.
type usage struct {
	cpu           time.Duration
	reads, writes int64
}

func (u usage) add(d usage) usage {
	return usage{u.cpu + d.cpu, u.reads + d.reads, u.writes + d.writes}
}
func (u usage) sub(d usage) usage {
	return usage{u.cpu - d.cpu, u.reads - d.reads, u.writes - d.writes}
}

// usages reads what each of procs has used.
func usages(procs []namedPID) []usage {
	out := make([]usage, len(procs))
	for i, p := range procs {
		out[i] = usageOf(p.pid)
	}
	return out
}

// usageOf reads what a process has used; of a process it cannot read,
// the system calls count none.
func usageOf(pid int) usage {
	u := usage{cpu: cpuTime(pid)}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return u
	}
	for _, line := range strings.Split(string(b), "\n") {
		name, value, _ := strings.Cut(line, ":")
		n, _ := strconv.ParseInt(strings.TrimSpace(value), 10, 64)
		switch name {
		case "syscr":
			u.reads = n
		case "syscw":
			u.writes = n
		}
	}
	return u
}

// ioUsed says what reads and writes each of procs made a request, of n.
func ioUsed(procs []namedPID, used []usage, n int) string {
	parts := make([]string, len(procs))
	for i, p := range procs {
		parts[i] = fmt.Sprintf("%s %.2f / %.2f", p.name, float64(used[i].reads)/float64(max(n, 1)), float64(used[i].writes)/float64(max(n, 1)))
	}
	return strings.Join(parts, ", ")
}

// memory reads a process's resident and peak resident set in MB.
func memory(pid int) (rss, peak float64) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 64)
		if err != nil {
			continue
		}
		switch name {
		case "VmRSS":
			rss = kb / 1024
		case "VmHWM":
			peak = kb / 1024
		}
	}
	return rss, peak
}
