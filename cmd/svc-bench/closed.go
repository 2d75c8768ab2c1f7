package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The closed-loop phase: each mode's throughput with every run recorded,
// at several numbers of connections, the modes in turns, with the CPU
// every process spends a call and the ceiling in-process mode's gain has
// once the CPU is saturated.

// closedFigures are one mode's figures of one closed loop.
type closedFigures struct {
	conns      int
	throughput float64
	// turnRates is the throughput in each of the loop's turns, in the
	// order taken: the modes' k-th turns, one right after the other, are
	// a round.
	turnRates []float64
	// machineCPU is the CPU per request of every process; gatewayCPU of
	// svc and its plugins alone, without the load and the upstream; svcCPU
	// of svc alone.
	machineCPU, gatewayCPU, svcCPU time.Duration
}

// closedPhase runs a closed loop for each of loads, a number of
// connections (-closed-conns). Few connections leave the CPU idle between
// calls, so that the throughput follows each call's latency; many
// saturate it, so that the throughput follows each call's CPU.
func closedPhase(o options, loads []int, direct string, targets []target, sums []summary) error {
	for _, conns := range loads {
		profile := o.cpuprofile
		if profile != "" && len(loads) > 1 {
			profile = strings.TrimSuffix(profile, filepath.Ext(profile)) + ".c" + strconv.Itoa(conns) + filepath.Ext(profile)
		}
		figs, err := closedLoad(o, conns, profile, direct, targets)
		if err != nil {
			return err
		}
		for i := range sums {
			sums[i].closed = append(sums[i].closed, figs[i])
		}
	}
	return nil
}

// closedLoad is one closed loop of conns connections: the upstream called
// directly, then each target in turns, their figures in targets' order.
func closedLoad(o options, conns int, profile, direct string, targets []target) ([]closedFigures, error) {
	fmt.Printf("\nclosed loop: %d connections, upstream without latency, every run recorded", conns)
	if len(targets) > 1 {
		fmt.Printf("; the modes in turns of %s", closedTurn)
	}
	fmt.Println()
	dt, err := closedLoop(direct, conns, o.duration)
	if err != nil {
		return nil, err
	}
	fmt.Printf("  direct %.0f req/s\n", dt.rate)
	type measured struct {
		procs      []namedPID // svc, its plugins, and svc-bench (the load and the upstream)
		client     *http.Client
		runsBefore int
		used       []usage // by each of procs in the target's turns
		st         sample
		busy       time.Duration // the target's turns
		turnRates  []float64
		profiled   chan error
	}
	turns := make([]*measured, len(targets))
	for i, t := range targets {
		before, err := t.svc.runCount()
		if err != nil {
			return nil, err
		}
		// svc-bench's own CPU is the load and the upstream: with it, the
		// CPU per request is every process of the closed loop, which the
		// modes' throughputs follow once the machine's CPU is saturated.
		procs := append(t.svc.processes(), namedPID{"svc-bench (load, upstream)", os.Getpid()})
		turns[i] = &measured{procs: procs, client: client(conns), runsBefore: before, used: make([]usage, len(procs)), profiled: make(chan error, 1)}
		if profile != "" {
			file := profile
			if len(targets) > 1 {
				file = strings.TrimSuffix(file, filepath.Ext(file)) + "." + t.mode + filepath.Ext(file)
			}
			// Over every turn: svc idles in the others' turns.
			go func() { turns[i].profiled <- t.svc.profile(file, time.Duration(len(targets))*o.duration+time.Second) }()
		} else {
			turns[i].profiled <- nil
		}
	}
	// The modes take turns, so that a change in the machine's other load
	// falls on each rather than on the one measured when it came. svc's
	// CPU counts from the start of its turn to the start of its next (the
	// last: to the end), so that what it does after its calls (their
	// batch written) counts against them; svc-bench's only in the turn.
	// Their system calls count the same way.
	svcTook := func(m *measured, mark []usage) {
		for j, now := range usages(m.procs[:len(m.procs)-1]) {
			m.used[j] = m.used[j].add(now.sub(mark[j]))
		}
	}
	marks := make([][]usage, len(targets))
	for left := o.duration; left > 0; left -= closedTurn {
		for i, t := range targets {
			m := turns[i]
			if marks[i] != nil {
				svcTook(m, marks[i])
			}
			marks[i] = usages(m.procs)
			start := time.Now()
			st, err := closedLoopWith(m.client, []string{t.chat()}, conns, min(left, closedTurn))
			if err != nil {
				return nil, err
			}
			took := time.Since(start)
			m.busy += took
			m.turnRates = append(m.turnRates, float64(st.ok)/took.Seconds())
			load := len(m.procs) - 1
			m.used[load] = m.used[load].add(usageOf(m.procs[load].pid).sub(marks[i][load]))
			m.st.lat = append(m.st.lat, st.lat...)
			m.st.ok += st.ok
			m.st.errors += st.errors
		}
	}
	figs := make([]closedFigures, len(targets))
	for i, t := range targets {
		m := turns[i]
		svcTook(m, marks[i])
		// The next loop has a client of its own: svc need not keep these.
		m.client.CloseIdleConnections()
		if perr := <-m.profiled; perr != nil {
			return nil, fmt.Errorf("cpu profile: %w", perr)
		}
		after, err := t.svc.runCount()
		if err != nil {
			return nil, err
		}
		m.st.rate = float64(m.st.ok) / m.busy.Seconds()
		perRequest := time.Duration(max(m.st.ok, 1))
		cpu := make([]time.Duration, len(m.used))
		for j, u := range m.used {
			cpu[j] = u.cpu
		}
		figs[i] = closedFigures{
			conns: conns, throughput: m.st.rate, turnRates: m.turnRates,
			machineCPU: sumDurations(cpu) / perRequest,
			gatewayCPU: sumDurations(cpu[:len(cpu)-1]) / perRequest,
			svcCPU:     cpu[0] / perRequest,
		}
		fmt.Printf("  svc %-11s %.0f req/s (p50 %s, p99 %s, %d errors); runs recorded %d of %d\n",
			t.mode, m.st.rate, ms(m.st.p(50)), ms(m.st.p(99)), m.st.errors, after-m.runsBefore, m.st.ok)
		fmt.Printf("  CPU per request: %s; all %.0f µs\n", cpuUsed(m.procs, cpu, m.st.ok), float64(figs[i].machineCPU.Nanoseconds())/1e3)
		fmt.Printf("  reads / writes per request: %s\n", ioUsed(m.procs[:len(m.procs)-1], m.used, m.st.ok))
	}
	return figs, nil
}

// closedTurn is how long each mode's turn of the closed loop lasts (a
// variable for tests).
var closedTurn = 2 * time.Second

// ceiling is the in-process throughput over plugin mode's that these
// figures of plugin mode allow were svc's own CPU per request the same in
// both modes: all that running the provider in svc's process can save is
// the plugin process's CPU. Once the machine's CPU is saturated, in
// process svc costs more than in plugin mode (it makes the upstream's
// exchange in place of its gRPC leg), so that this bounds the ratio; with
// the CPU idle between calls the throughput follows latency instead, and
// it bounds nothing.
func (c closedFigures) ceiling() float64 {
	left := c.machineCPU - (c.gatewayCPU - c.svcCPU)
	if left <= 0 {
		return 0
	}
	return float64(c.machineCPU) / float64(left)
}

// turnRatios is the in-process throughput over plugin mode's in each
// round of turns both took.
func turnRatios(plugin, inProcess []float64) []float64 {
	var r []float64
	for k := range min(len(plugin), len(inProcess)) {
		if plugin[k] > 0 {
			r = append(r, inProcess[k]/plugin[k])
		}
	}
	return r
}

// cpuRatio is a CPU per request in plugin mode and in process, and their
// ratio.
func cpuRatio(plugin, inProcess time.Duration) string {
	if plugin <= 0 || inProcess <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f / %.0f µs (%.2f×)", float64(plugin.Nanoseconds())/1e3, float64(inProcess.Nanoseconds())/1e3, float64(plugin)/float64(inProcess))
}
