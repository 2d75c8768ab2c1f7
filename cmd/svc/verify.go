package main

import (
	"context"
	"crypto/ed25519"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/svc-gateway/svc/internal/config"
	"github.com/svc-gateway/svc/internal/ledger"
	"github.com/svc-gateway/svc/internal/store"
)

// The exit codes of svc verify.
const (
	verifyWhole    = 0 // the database matches its signed checkpoints
	verifyMismatch = 1 // something does not: the report names it
	verifyUsage    = 2 // bad flags, or a file that cannot be read
)

// keyFlags collects -public-key, which may be given more than once (a key
// that was replaced, and its successor).
type keyFlags []string

func (k *keyFlags) String() string     { return strings.Join(*k, ",") }
func (k *keyFlags) Set(v string) error { *k = append(*k, v); return nil }

// shownRuns and shownProblems bound what the report lists.
const (
	shownRuns     = 20
	shownProblems = 50
)

// verifyMain is `svc verify`: it checks a database, offline and read only,
// against its signed checkpoints and the ledger's public key, and returns
// the exit code.
func verifyMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("svc verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	db := fs.String("db", "", "the database to verify: an SQLite file, or a PostgreSQL address (postgres://…); read only, nothing written")
	var keyArgs keyFlags
	fs.Var(&keyArgs, "public-key", "the ledger's public key: hex, base64, or a file holding it (PEM, or the JSON of GET /api/v1/ledger/key); repeat for a replaced key")
	kept := fs.String("checkpoints", "", "a file of checkpoints kept elsewhere (GET /api/v1/ledger/checkpoints answers, ledger.checkpoint webhook bodies); the database must still hold each")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: svc verify -db <file|postgres://…> -public-key <hex|base64|file> [-checkpoints <file>]\n\n"+
			"Checks every run of the database against the ledger's signed checkpoints and names the first\n"+
			"that does not match. Exit status: 0 whole, 1 mismatch, 2 usage error or unreadable input.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return verifyWhole
		}
		return verifyUsage
	}
	usage := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "svc verify: "+format+"\n", a...)
		return verifyUsage
	}
	switch {
	case fs.NArg() > 0:
		return usage("unexpected argument %q (flags only; see -h)", fs.Arg(0))
	case *db == "":
		return usage("-db is required")
	case len(keyArgs) == 0:
		return usage("-public-key is required (GET /api/v1/ledger/key shows it)")
	}
	keys, err := readKeys(keyArgs)
	if err != nil {
		return usage("-public-key: %v", err)
	}
	var pinned []ledger.Checkpoint
	if *kept != "" {
		if pinned, err = readKept(*kept, keys); err != nil {
			return usage("-checkpoints: %v", err)
		}
	}
	ctx := context.Background()
	s, err := store.OpenLedgerSnapshot(ctx, *db)
	if err != nil {
		if config.IsPostgres(*db) {
			return usage("%v", err) // the address may hold a password
		}
		return usage("%s: %v", *db, err)
	}
	defer s.Close()
	name := s.Source()
	if ok, err := s.HasLedger(ctx); err != nil || !ok {
		return usage("%s: not a database with svc's run ledger (a database of an older svc gets it at its next start): %v", name, err)
	}
	report, err := ledger.VerifyLedger(ctx, s, keys, pinned)
	if err != nil {
		return usage("%s: reading the database failed: %v", name, err)
	}
	printReport(stdout, name, report, len(pinned))
	if !report.OK() {
		return verifyMismatch
	}
	return verifyWhole
}

// readKeys reads each -public-key: a file's content when it names a file,
// else the value itself.
func readKeys(args []string) ([]ed25519.PublicKey, error) {
	var keys []ed25519.PublicKey
	for _, a := range args {
		text := a
		if b, err := os.ReadFile(a); err == nil {
			text = string(b)
		}
		k, err := ledger.ParsePublicKey(text)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", a, err)
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// readKept reads the checkpoints kept elsewhere; each must verify with the
// keys given, or it is no evidence of anything.
func readKept(path string, keys []ed25519.PublicKey) ([]ledger.Checkpoint, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cps, err := ledger.ParseCheckpoints(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(cps) == 0 {
		return nil, fmt.Errorf("%s holds no checkpoint", path)
	}
	for _, cp := range cps {
		if err := cp.CheckSignature(keys); err != nil {
			return nil, fmt.Errorf("%s: checkpoint %d of tenant %s: %w", path, cp.Number, cp.TenantID, err)
		}
	}
	return cps, nil
}

func printReport(w io.Writer, db string, r *ledger.Report, kept int) {
	fmt.Fprintf(w, "svc verify %s\n", db)
	fmt.Fprintf(w, "tenants: %d, checkpoints: %d", r.Tenants, r.Checkpoints)
	if kept > 0 {
		fmt.Fprintf(w, " (%d kept elsewhere, checked against them)", kept)
	}
	fmt.Fprintf(w, "\nledger entries: %d covered by a checkpoint, %d not yet\n", r.Covered, r.Uncovered)
	fmt.Fprintf(w, "runs: %d match the ledger (%d of them recorded before it, entered at the upgrade), %d deleted by retention\n",
		r.Runs, r.Legacy, r.Pruned)
	if n := len(r.UncoveredRuns); n > 0 {
		fmt.Fprintf(w, "runs not yet covered by a checkpoint (they match svc's entries, which no signature vouches for yet): %d\n", n)
		for _, ref := range r.UncoveredRuns[:min(n, shownRuns)] {
			fmt.Fprintf(w, "  tenant %s run %s\n", ref.TenantID, ref.RunID)
		}
		if n > shownRuns {
			fmt.Fprintf(w, "  and %d more\n", n-shownRuns)
		}
	}
	if r.OK() {
		fmt.Fprintln(w, "ok: the database matches its signed checkpoints")
		return
	}
	fmt.Fprintf(w, "MISMATCH: %s\n", r.Problems[0])
	if n := len(r.Problems); n > 1 {
		fmt.Fprintf(w, "%d problems in all:\n", n)
		for _, p := range r.Problems[:min(n, shownProblems)] {
			fmt.Fprintf(w, "  %s\n", p)
		}
		if n > shownProblems {
			fmt.Fprintf(w, "  and %d more\n", n-shownProblems)
		}
	}
}
