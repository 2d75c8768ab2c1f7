package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/svc-gateway/svc/internal/pgtest"
	"github.com/svc-gateway/svc/internal/store"
)

// The replicas phase: closed-loop throughput, with every run recorded, of
// one svc on SQLite, one on PostgreSQL and three on one PostgreSQL database
// with the load spread over them, against the upstream without latency (as
// in the closed phase). PostgreSQL is a throwaway server (internal/pgtest);
// without its programs the phase says so and is not run.

// replicaSetup is one configuration of the phase.
type replicaSetup struct {
	name     string
	replicas int
	postgres bool
}

var replicaSetups = []replicaSetup{
	{"1 svc, SQLite", 1, false},
	{"1 svc, PostgreSQL", 1, true},
	{"3 svcs, PostgreSQL", 3, true},
}

func replicasPhase(o options, up *upstream) error {
	fmt.Printf("\nreplicas: closed loop, %d connections spread over the replicas, upstream without latency, every run recorded\n", o.conns)
	pg, err := pgtest.Shared()
	if errors.Is(err, pgtest.ErrMissing) {
		fmt.Printf("  not run: PostgreSQL is not installed here (%v); install Debian's postgresql package\n", err)
		return nil
	}
	if err != nil {
		return fmt.Errorf("replicas: start PostgreSQL: %w", err)
	}
	defer pgtest.Stop()
	// Each setup's database is a copy of one migrated here once, so that
	// no svc spends its start (and the phase its time) migrating.
	template := fmt.Sprintf("bench%d_template", os.Getpid())
	if err := pg.CreateNamed(template, ""); err != nil {
		return fmt.Errorf("replicas: %w", err)
	}
	s, err := store.Open(context.Background(), pg.Address(template))
	if err != nil {
		return fmt.Errorf("replicas: migrate: %w", err)
	}
	if err := s.Close(); err != nil {
		return fmt.Errorf("replicas: migrate: %w", err)
	}
	// A setup that fails is said so, and the others still measured.
	var failed []string
	for i, s := range replicaSetups {
		if err := replicaRun(o, up, pg, template, s, i); err != nil {
			fmt.Printf("  %-19s failed: %v\n", s.name, err)
			failed = append(failed, s.name)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("replicas: %s failed", strings.Join(failed, "; "))
	}
	return nil
}

// replicaRun starts setup's svcs, warms them, and measures them.
func replicaRun(o options, up *upstream, pg *pgtest.Server, template string, setup replicaSetup, n int) error {
	dir, err := os.MkdirTemp("", "svc-bench-replicas-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	var shared []string
	if setup.postgres {
		name := fmt.Sprintf("bench%d_%d", os.Getpid(), n)
		if err := pg.CreateNamed(name, template); err != nil {
			return err
		}
		shared = []string{"SVC_DB=" + pg.Address(name), "SVC_LEDGER_KEY_FILE=" + filepath.Join(dir, "ledger.key")}
	}
	var svcs []*svcProcess
	defer func() {
		for _, p := range svcs {
			p.stop()
		}
	}()
	// One after the other: the first migrates the database and makes the
	// signing key the others read.
	for i := range setup.replicas {
		oc := o
		oc.env = append(slices.Clone(o.env), shared...)
		if setup.postgres {
			oc.env = append(oc.env, "SVC_JOURNAL_DIR="+filepath.Join(dir, "journal"+strconv.Itoa(i)))
		}
		p, err := startSVC(oc, up.url, nil)
		if err != nil {
			return err
		}
		svcs = append(svcs, p)
	}
	urls := make([]string, len(svcs))
	for i, p := range svcs {
		urls[i] = p.url + "/v1/chat/completions"
	}
	warm, err := closedLoopOver(urls, o.conns, min(time.Second, o.duration))
	if err != nil {
		return err
	}
	// Every replica of one database counts the same runs; the database is
	// new, so the warm-up's are all there are before the measure.
	before, err := waitRuns(svcs[0], warm.ok)
	if err != nil {
		return err
	}
	var procs []namedPID
	for _, p := range svcs {
		procs = append(procs, p.processes()...)
	}
	cpuBefore := cpuTimes(procs)
	pgBefore := postgresCPU()
	st, err := closedLoopOver(urls, o.conns, o.duration)
	if err != nil {
		return err
	}
	cpu := cpuByName(procs, cpuBefore, st.ok)
	if setup.postgres {
		cpu += fmt.Sprintf(", postgres %.0f µs", float64(postgresCPU().since(pgBefore).Microseconds())/float64(max(st.ok, 1)))
	}
	after, err := waitRuns(svcs[0], before+st.ok)
	if err != nil {
		return err
	}
	recorded := after - before
	fmt.Printf("  %-19s %5.0f req/s (p50 %s, p99 %s, %d errors); runs recorded %d of %d\n",
		setup.name, st.rate, ms(st.p(50)), ms(st.p(99)), st.errors, recorded, st.ok)
	fmt.Printf("  %-19s CPU per request: %s\n", "", cpu)
	return nil
}

// waitRuns waits up to 10 s for p to count want runs (each replica
// journals a run before its answer and stores it in a batch) and returns
// the count.
func waitRuns(p *svcProcess, want int) (int, error) {
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		n, err := p.runCount()
		if err != nil || n >= want || time.Now().After(deadline) {
			return n, err
		}
	}
}

// cpuByName tells the CPU time procs used since before, per request of n,
// summed over the processes of one name (svc, its plugin) of every replica.
func cpuByName(procs []namedPID, before []time.Duration, n int) string {
	var names []string
	used := map[string]time.Duration{}
	count := map[string]int{}
	for i, p := range procs {
		if _, ok := used[p.name]; !ok {
			names = append(names, p.name)
		}
		used[p.name] += cpuTime(p.pid) - before[i]
		count[p.name]++
	}
	parts := make([]string, len(names))
	for i, name := range names {
		parts[i] = fmt.Sprintf("%s %.0f µs", name, float64(used[name].Microseconds())/float64(max(n, 1)))
		if count[name] > 1 {
			parts[i] += fmt.Sprintf(" (%d processes)", count[name])
		}
	}
	return strings.Join(parts, ", ")
}

// pgCPU is the CPU time of each PostgreSQL process of this program's
// server: the postmaster (a child of this process) and its backends.
type pgCPU map[int]time.Duration

func postgresCPU() pgCPU {
	out := pgCPU{}
	self := strconv.Itoa(os.Getpid())
	var parents []string
	for pid, s := range procStats() {
		if s.ppid == self && s.comm == "postgres" {
			out[pid] = s.cpu
			parents = append(parents, strconv.Itoa(pid))
		}
	}
	for pid, s := range procStats() {
		if slices.Contains(parents, s.ppid) {
			out[pid] = s.cpu
		}
	}
	return out
}

// since is the CPU time used from before to c by the processes alive now
// (a backend that ended in between takes its time along).
func (c pgCPU) since(before pgCPU) time.Duration {
	var d time.Duration
	for pid, t := range c {
		d += t - before[pid]
	}
	return d
}

type procStat struct {
	comm, ppid string
	cpu        time.Duration
}

// procStats reads every process's name, parent and CPU time from /proc.
func procStats() map[int]procStat {
	out := map[int]procStat{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(stat)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) < 13 {
			continue
		}
		utime, _ := strconv.ParseInt(fields[11], 10, 64)
		stime, _ := strconv.ParseInt(fields[12], 10, 64)
		out[pid] = procStat{
			comm: s[strings.IndexByte(s, '(')+1 : strings.LastIndexByte(s, ')')],
			ppid: fields[1],
			cpu:  time.Duration(utime+stime) * 10 * time.Millisecond,
		}
	}
	return out
}
