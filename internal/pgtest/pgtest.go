// Package pgtest runs a throwaway PostgreSQL server for tests: a cluster
// made with initdb in a temporary folder, started once per test process and
// stopped with it, and a fresh database for each test that asks.
//
// It needs the server's programs (Debian's postgresql package; .ci/run
// installs it). Without them a test that asks skips, saying why, unless
// SVC_TEST_DB=postgres asks for PostgreSQL: it fails then. As root,
// which PostgreSQL refuses, the server runs as the postgres user (or
// nobody).
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Server is a running cluster.
type Server struct {
	dir    string // the temporary folder: data/ and the socket
	socket string
	proc   *exec.Cmd
}

var (
	once    sync.Once
	shared  *Server
	failure error
	dbs     atomic.Int64
)

// Shared returns the process's server, starting it on first use; for
// programs other than tests (a benchmark). ErrMissing says PostgreSQL is not
// installed.
func Shared() (*Server, error) {
	once.Do(func() { shared, failure = start() })
	return shared, failure
}

// Start returns the process's server, starting it on first use. A machine
// without PostgreSQL's programs skips tb.
func Start(tb testing.TB) *Server {
	tb.Helper()
	_, failure := Shared()
	if errors.Is(failure, ErrMissing) {
		missing(tb, failure)
	}
	if failure != nil {
		tb.Fatalf("start PostgreSQL: %v", failure)
	}
	return shared
}

// missing skips tb, saying why, on a machine without PostgreSQL; but fails
// it where SVC_TEST_DB=postgres asks for PostgreSQL, so that a run meant to
// test it cannot pass without it.
func missing(tb testing.TB, err error) {
	tb.Helper()
	if os.Getenv("SVC_TEST_DB") == "postgres" {
		tb.Fatalf("SVC_TEST_DB=postgres but PostgreSQL is not installed here (%v): install Debian's postgresql package", err)
		return
	}
	tb.Skipf("SKIPPED, PostgreSQL is not installed here (%v): install Debian's postgresql package to run the PostgreSQL tests", err)
}

// DSN is the address of a new, empty database on the process's server.
func DSN(tb testing.TB) string {
	tb.Helper()
	return Start(tb).CreateDatabase(tb, "")
}

// Address is the address of database name on the server.
func (s *Server) Address(name string) string {
	return "postgres://postgres@/" + name + "?host=" + s.socket + "&sslmode=disable"
}

// CreateDatabase creates a new database, a copy of template when one is
// named (no one may be connected to it), and returns its address.
func (s *Server) CreateDatabase(tb testing.TB, template string) string {
	tb.Helper()
	name := fmt.Sprintf("t%d_%d", os.Getpid(), dbs.Add(1))
	if err := s.CreateNamed(name, template); err != nil {
		tb.Fatalf("create database: %v", err)
	}
	return s.Address(name)
}

// CreateNamed creates database name, a copy of template when one is named.
func (s *Server) CreateNamed(name, template string) error {
	q := "CREATE DATABASE " + pgx.Identifier{name}.Sanitize()
	if template != "" {
		q += " TEMPLATE " + pgx.Identifier{template}.Sanitize() + " STRATEGY FILE_COPY"
	}
	return s.Exec(q)
}

// Exec runs one statement as the superuser in the postgres database.
func (s *Server) Exec(q string, args ...any) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.Address("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, q, args...)
	return err
}

// ErrMissing is the failure to find PostgreSQL's programs.
var ErrMissing = errors.New("initdb and postgres not found")

// binDir finds initdb and postgres: on PATH, or in Debian's versioned
// folder (which its package does not put on PATH).
func binDir() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if _, err := exec.LookPath("postgres"); err == nil {
			return filepath.Dir(p), nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "postgres")); err == nil {
			return d, nil
		}
	}
	return "", ErrMissing
}

func version(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

func start() (*Server, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	removeStale()
	dir, err := os.MkdirTemp("", "svc-pgtest-")
	if err != nil {
		return nil, err
	}
	cred, err := runAs(dir)
	if err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "-A", "trust",
		"-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	initdb.Dir = dir
	if out, err := initdb.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	// Durability is not under test here: no fsync, for speed. Only the
	// socket in the folder listens, so parallel test processes never meet.
	proc := exec.Command(filepath.Join(bin, "postgres"), "-D", data, "-k", dir, "-c", "listen_addresses=",
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "max_connections=400", "-c", "shared_buffers=32MB", "-c", "max_locks_per_transaction=256",
		"-c", "max_pred_locks_per_transaction=256")
	// The server dies with the test process, even one killed.
	proc.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGQUIT}
	proc.Dir = dir
	logFile, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		return nil, err
	}
	proc.Stdout, proc.Stderr = logFile, logFile
	// Pdeathsig fires when the thread that started the server ends, not
	// only the process: the server is started from a goroutine that keeps
	// its thread, locked, for as long as the server runs, so that no other
	// goroutine can end that thread (one that locks its thread and returns
	// ends it, as the plugin host's do).
	started, exited := make(chan error, 1), make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := proc.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		exited <- proc.Wait()
		_ = logFile.Close()
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	s := &Server{dir: dir, socket: dir, proc: proc}
	if err := s.waitReady(exited); err != nil {
		_ = proc.Process.Kill()
		log, _ := os.ReadFile(filepath.Join(dir, "server.log"))
		return nil, fmt.Errorf("%w\n%s", err, log)
	}
	return s, nil
}

// waitReady waits until the server takes connections, or has exited.
func (s *Server) waitReady(exited <-chan error) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		err := s.Exec("SELECT 1")
		if err == nil {
			return nil
		}
		select {
		case werr := <-exited:
			return fmt.Errorf("postgres exited: %v", werr)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("postgres did not take connections: %w", err)
		}
	}
}

// runAs is the user the server runs as: the test's own, unless that is
// root, which PostgreSQL refuses; then postgres, or nobody, which is given
// the folder.
func runAs(dir string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	var u *user.User
	var err error
	for _, name := range []string{"postgres", "nobody"} {
		if u, err = user.Lookup(name); err == nil {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("running as root, and no postgres or nobody user to run PostgreSQL as: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		return nil, err
	}
	// The temporary folder's parents must let that user through.
	for d := filepath.Dir(dir); d != "/" && strings.HasPrefix(d, os.TempDir()); d = filepath.Dir(d) {
		if fi, err := os.Stat(d); err == nil && fi.Mode().Perm()&0o001 == 0 {
			return nil, fmt.Errorf("%s is closed to the %s user", d, u.Username)
		}
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// Stop stops the process's server, when one started, and removes its
// folder; a TestMain may call it after m.Run. A process that ends without
// it takes its server along, and a later one removes the folder.
func Stop() {
	if shared == nil {
		return
	}
	_ = shared.proc.Process.Signal(syscall.SIGQUIT)
	_ = os.RemoveAll(shared.dir)
}

// removeStale removes the folders of servers whose test process is gone:
// their postmaster is dead, or never started and the folder is old.
func removeStale() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "svc-pgtest-*"))
	for _, d := range dirs {
		pid, err := os.ReadFile(filepath.Join(d, "data", "postmaster.pid"))
		if err != nil {
			if fi, err := os.Stat(d); err == nil && time.Since(fi.ModTime()) > 10*time.Minute {
				_ = os.RemoveAll(d)
			}
			continue
		}
		n, _ := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(pid), "\n", 2)[0]))
		if n > 0 && errors.Is(syscall.Kill(n, 0), syscall.ESRCH) {
			_ = os.RemoveAll(d)
		}
	}
}
