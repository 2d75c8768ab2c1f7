package ledger

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/svc-gateway/svc/internal/errs"
)

// LedgerSource is a database as the offline verifier reads it.
type LedgerSource interface {
	// LedgerTenantIDs returns every tenant with runs, ledger entries or
	// checkpoints.
	LedgerTenantIDs(ctx context.Context) ([]string, error)
	// Checkpoints returns the tenant's checkpoints, oldest first.
	Checkpoints(ctx context.Context, tenantID string) ([]Checkpoint, error)
	Entries(ctx context.Context, tenantID string, after, upTo int64, limit int) ([]Entry, error)
	// RunChain returns a run as stored; errs.NotFound when there is none.
	RunChain(ctx context.Context, tenantID, id string) (StoredRun, error)
	// EachRun calls fn with the id of each of the tenant's runs.
	EachRun(ctx context.Context, tenantID string, fn func(id string) error) error
}

// The reasons the offline verification reports.
const (
	// A checkpoint's signature does not verify, or it names a key not given.
	ProblemSignature = "checkpoint_signature"
	// The tenant's checkpoints are not one unbroken chain: one was
	// deleted, inserted or changed.
	ProblemCheckpointChain = "checkpoint_chain"
	// A checkpoint kept elsewhere (-checkpoints) is not in the database, or
	// differs from the database's.
	ProblemCheckpointMissing = "checkpoint_missing"
	ProblemCheckpointDiffers = "checkpoint_differs"
	// The entries a checkpoint covers no longer add up to its root: an
	// entry was deleted, changed or inserted.
	ProblemEntries = "entries_mismatch"
	// A run the ledger recorded is gone, and no retention sweep in a
	// checkpoint took it.
	ProblemRunDeleted = "run_deleted"
	// A field of a run differs from what the ledger recorded.
	ProblemRunMismatch = "run_mismatch"
	// A run is in the database but not in the ledger: inserted.
	ProblemRunInserted = "run_inserted"
	// Fewer or more events are stored than the ledger recorded.
	ProblemEventsDeleted  = "events_deleted"
	ProblemEventsInserted = "events_inserted"
	// A stored event does not link to the one before it (changed,
	// reordered or inserted without recomputing the chain).
	ProblemEventMismatch = "event_mismatch"
	// The events link up but end elsewhere than the ledger recorded: the
	// chain was recomputed after a change.
	ProblemChainRewritten = "chain_rewritten"
	// The run's stored head is not the one the ledger recorded last.
	ProblemHeadMismatch = "head_mismatch"
	// The database holds runs or ledger entries but no checkpoint at all:
	// nothing can be verified against a signature.
	ProblemNoCheckpoints = "no_checkpoints"
	// A tenant's entries that a round of checkpoints sealed (their seq is
	// at most the highest a signed checkpoint covers) are covered by none
	// of its checkpoints: they were deleted, and the entries rewritten.
	ProblemEntriesUncovered = "entries_uncovered"
)

// Problem is one mismatch between a database and its signed ledger.
type Problem struct {
	TenantID string
	RunID    string // empty for a problem of the checkpoints
	// Checkpoint is the checkpoint that covers what is wrong; 0 when it
	// is not covered by one yet (found by the entries svc wrote beside
	// it, which an attacker could have rewritten too).
	Checkpoint int64
	Reason     string
	Detail     string
}

func (p Problem) String() string {
	var b strings.Builder
	b.WriteString("tenant " + p.TenantID)
	if p.RunID != "" {
		b.WriteString(" run " + p.RunID)
	}
	fmt.Fprintf(&b, ": %s: %s", p.Reason, p.Detail)
	if p.Checkpoint > 0 {
		fmt.Fprintf(&b, " (covered by checkpoint %d)", p.Checkpoint)
	} else if p.RunID != "" && p.Reason != ProblemEntriesUncovered {
		b.WriteString(" (not yet covered by a checkpoint)")
	}
	return b.String()
}

// RunRef names a run.
type RunRef struct {
	TenantID string
	RunID    string
}

// Report is what VerifyLedger found.
type Report struct {
	Tenants     int
	Checkpoints int
	Covered     int // entries covered by a checkpoint
	Uncovered   int // entries not yet covered by one
	Runs        int // runs whose fields, events and head match the ledger
	Pruned      int // runs a retention sweep deleted (in UncoveredRuns when no checkpoint covers the sweep yet)
	// Legacy counts the runs among Runs recorded before the ledger: they
	// were entered (EntryLegacy) as found when svc first started with it,
	// and are checked against that from then on.
	Legacy int
	// UncoveredRuns are runs whose newest entry no checkpoint covers yet:
	// they matched the entries (or a sweep's entry accounts for them
	// being gone), but nothing signed vouches for those.
	UncoveredRuns []RunRef
	Problems      []Problem
}

// OK reports whether nothing was found wrong.
func (r *Report) OK() bool { return len(r.Problems) == 0 }

// maxProblems bounds the problems one verification collects.
const maxProblems = 10_000

// VerifyLedger checks a database against its signed checkpoints: every
// checkpoint's signature (with one of keys) and its link to the one before;
// that each covered range of entries still has its checkpoint's Merkle
// root; then, for each run an entry names, that it exists (or was deleted
// by a retention sweep a checkpoint covers), that its fields still have the
// digest its entry recorded, and that its events chain to each head its
// entries recorded and no further. Every run must be named by an entry
// (svc enters the runs stored before the ledger at its first start with
// it): one that is not was inserted. Each tenant's entries up to the
// highest seq any signed checkpoint covers must be covered by one of its
// own checkpoints, since svc seals every tenant up to one seq in a round.
// kept are checkpoints the operator kept elsewhere: the database must
// still hold each of them, unchanged. The error is for a database that
// cannot be read.
func VerifyLedger(ctx context.Context, src LedgerSource, keys []ed25519.PublicKey, kept []Checkpoint) (*Report, error) {
	v := &verifier{src: src, keys: keys, kept: map[string][]Checkpoint{}, report: &Report{}}
	tenants, err := src.LedgerTenantIDs(ctx)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, id := range tenants {
		seen[id] = true
	}
	for _, cp := range kept {
		v.kept[cp.TenantID] = append(v.kept[cp.TenantID], cp)
		if !seen[cp.TenantID] {
			seen[cp.TenantID] = true
			tenants = append(tenants, cp.TenantID)
		}
	}
	v.report.Tenants = len(tenants)
	// Every checkpoint first: the highest seq a signed one covers bounds
	// what each tenant's own checkpoints must cover.
	cps := make([][]Checkpoint, len(tenants))
	chained := make([]bool, len(tenants))
	for i, id := range tenants {
		if cps[i], err = src.Checkpoints(ctx, id); err != nil {
			return nil, fmt.Errorf("tenant %s: %w", id, err)
		}
		v.report.Checkpoints += len(cps[i])
		if chained[i] = v.checkpoints(id, cps[i]); !chained[i] {
			continue
		}
		v.checkKept(id, cps[i])
		if len(cps[i]) > 0 {
			v.sealed = max(v.sealed, cps[i][len(cps[i])-1].LastSeq)
		}
	}
	for i, id := range tenants {
		if !chained[i] {
			continue // what they cover cannot be trusted to check anything against
		}
		if err := v.tenant(ctx, id, cps[i]); err != nil {
			return nil, fmt.Errorf("tenant %s: %w", id, err)
		}
	}
	if r := v.report; r.Checkpoints == 0 && (r.Covered+r.Uncovered > 0 || v.runs > 0) {
		v.problem(Problem{Reason: ProblemNoCheckpoints,
			Detail: fmt.Sprintf("%d runs, %d ledger entries and no checkpoint: nothing can be verified against a signature",
				v.runs, r.Uncovered)})
	}
	return v.report, nil
}

type verifier struct {
	src    LedgerSource
	keys   []ed25519.PublicKey
	kept   map[string][]Checkpoint
	report *Report
	// sealed is the highest seq a signed checkpoint covers: every tenant's
	// entries up to it were sealed in some round.
	sealed int64
	runs   int // runs in the database
}

func (v *verifier) problem(p Problem) {
	if len(v.report.Problems) < maxProblems {
		v.report.Problems = append(v.report.Problems, p)
	}
}

// runLedger is what the ledger says of one run: its entries, in order.
type runLedger struct {
	entries []Entry
	covered []int64 // the checkpoint covering each entry, 0 for none
	digest  *Hash   // from its run or legacy entry
	legacy  bool    // entered as stored before the ledger
}

func (v *verifier) tenant(ctx context.Context, tenantID string, cps []Checkpoint) error {

	runs := map[string]*runLedger{}
	var order []string
	var prunes []Entry
	var pruneCovered []int64
	note := func(e Entry, checkpoint int64) {
		if e.Kind == EntryPrune {
			prunes, pruneCovered = append(prunes, e), append(pruneCovered, checkpoint)
			return
		}
		r := runs[e.RunID]
		if r == nil {
			r = &runLedger{}
			runs[e.RunID] = r
			order = append(order, e.RunID)
		}
		if (e.Kind == EntryRun || e.Kind == EntryLegacy) && r.digest == nil {
			d := e.Digest
			r.digest, r.legacy = &d, e.Kind == EntryLegacy
		}
		r.entries, r.covered = append(r.entries, e), append(r.covered, checkpoint)
	}
	var after int64
	for _, cp := range cps {
		entries, err := v.src.Entries(ctx, tenantID, after, cp.LastSeq, cp.Entries+1)
		if err != nil {
			return err
		}
		v.checkRoot(tenantID, cp, entries)
		for _, e := range entries {
			note(e, cp.Number)
		}
		v.report.Covered += len(entries)
		after = cp.LastSeq
	}
	lastCovered := after
	for {
		entries, err := v.src.Entries(ctx, tenantID, after, math.MaxInt64, maxCheckpointEntries)
		if err != nil {
			return err
		}
		if len(entries) == 0 {
			break
		}
		if first := entries[0]; after == lastCovered && first.Seq <= v.sealed {
			what := "a retention sweep"
			if first.RunID != "" {
				what = "run " + first.RunID
			}
			v.problem(Problem{TenantID: tenantID, RunID: first.RunID, Reason: ProblemEntriesUncovered,
				Detail: fmt.Sprintf("entry %d (%s) is covered by none of the tenant's checkpoints, yet checkpoints cover entries up to %d: "+
					"the tenant's checkpoints were deleted", first.Seq, what, v.sealed)})
		}
		for _, e := range entries {
			note(e, 0)
		}
		v.report.Uncovered += len(entries)
		after = entries[len(entries)-1].Seq
	}

	for _, id := range order {
		if err := v.run(ctx, tenantID, id, runs[id], prunes, pruneCovered); err != nil {
			return err
		}
	}
	return v.src.EachRun(ctx, tenantID, func(id string) error {
		v.runs++
		if runs[id] == nil {
			v.problem(Problem{TenantID: tenantID, RunID: id, Reason: ProblemRunInserted,
				Detail: "the run is in the database but in no ledger entry: svc writes one with every run it stores"})
		}
		return nil
	})
}

// checkpoints checks the tenant's checkpoint chain, reporting the first
// break; false when there is one.
func (v *verifier) checkpoints(tenantID string, cps []Checkpoint) bool {
	for i := range cps {
		cp := &cps[i]
		fail := func(reason, format string, args ...any) bool {
			v.problem(Problem{TenantID: tenantID, Checkpoint: cp.Number, Reason: reason, Detail: fmt.Sprintf(format, args...)})
			return false
		}
		if cp.Number != int64(i+1) {
			return fail(ProblemCheckpointChain, "checkpoint %d follows checkpoint %d: checkpoints in between were deleted", cp.Number, i)
		}
		if err := cp.CheckSignature(v.keys); err != nil {
			return fail(ProblemSignature, "checkpoint %d: %v", cp.Number, err)
		}
		var prev Hash
		var prevLast int64
		if i > 0 {
			prev, prevLast = cps[i-1].ComputeHash(), cps[i-1].LastSeq
		}
		if cp.Prev != prev {
			return fail(ProblemCheckpointChain, "checkpoint %d does not link to checkpoint %d", cp.Number, i)
		}
		if cp.FirstSeq <= prevLast || cp.LastSeq < cp.FirstSeq || cp.Entries < 1 {
			return fail(ProblemCheckpointChain, "checkpoint %d covers entries %d to %d after %d", cp.Number, cp.FirstSeq, cp.LastSeq, prevLast)
		}
	}
	return true
}

// checkKept reports a checkpoint kept elsewhere that the database lost or
// changed: the newest checkpoints were deleted, or the chain rewritten.
func (v *verifier) checkKept(tenantID string, cps []Checkpoint) {
	for _, k := range v.kept[tenantID] {
		switch {
		case k.Number < 1 || k.Number > int64(len(cps)):
			v.problem(Problem{TenantID: tenantID, Checkpoint: k.Number, Reason: ProblemCheckpointMissing,
				Detail: fmt.Sprintf("checkpoint %d, kept elsewhere, is not in the database (it holds %d): checkpoints were deleted", k.Number, len(cps))})
		case !bytes.Equal(cps[k.Number-1].Message(), k.Message()) || cps[k.Number-1].Signature != k.Signature:
			v.problem(Problem{TenantID: tenantID, Checkpoint: k.Number, Reason: ProblemCheckpointDiffers,
				Detail: fmt.Sprintf("checkpoint %d differs from the one kept elsewhere: the checkpoints were rewritten", k.Number)})
		}
	}
}

// checkRoot reports a checkpoint whose entries no longer add up to its
// root.
func (v *verifier) checkRoot(tenantID string, cp Checkpoint, entries []Entry) {
	leaves := make([]Hash, len(entries))
	for i := range entries {
		leaves[i] = entries[i].LeafHash()
	}
	switch {
	case len(entries) != cp.Entries:
		v.problem(Problem{TenantID: tenantID, Checkpoint: cp.Number, Reason: ProblemEntries,
			Detail: fmt.Sprintf("checkpoint %d signed %d entries (seq %d to %d), %d are stored: entries were deleted or inserted",
				cp.Number, cp.Entries, cp.FirstSeq, cp.LastSeq, len(entries))})
	case entries[0].Seq != cp.FirstSeq || MerkleRoot(leaves) != cp.Root:
		v.problem(Problem{TenantID: tenantID, Checkpoint: cp.Number, Reason: ProblemEntries,
			Detail: fmt.Sprintf("the entries of checkpoint %d (seq %d to %d) no longer have its Merkle root: an entry was changed",
				cp.Number, cp.FirstSeq, cp.LastSeq)})
	}
}

// run checks one run against its entries.
func (v *verifier) run(ctx context.Context, tenantID, id string, r *runLedger, prunes []Entry, pruneCovered []int64) error {
	last := len(r.entries) - 1
	latest, checkpoint := r.entries[last], r.covered[last]
	fail := func(reason, format string, args ...any) {
		v.problem(Problem{TenantID: tenantID, RunID: id, Checkpoint: checkpoint, Reason: reason, Detail: fmt.Sprintf(format, args...)})
	}
	c, err := v.src.RunChain(ctx, tenantID, id)
	if errs.Is(err, errs.NotFound) {
		// The first sweep after the run's newest entry whose cutoff takes
		// it; one a checkpoint covers, if any.
		found := -1
		for i, p := range prunes {
			if p.Seq > latest.Seq && latest.RunAt.Before(p.RunAt) && (found < 0 || pruneCovered[i] > 0) {
				if found = i; pruneCovered[i] > 0 {
					break
				}
			}
		}
		switch {
		case found < 0:
			fail(ProblemRunDeleted, "the ledger recorded the run (entry %d) and no retention sweep deleted it", latest.Seq)
		case pruneCovered[found] == 0:
			v.report.Pruned++
			v.report.UncoveredRuns = append(v.report.UncoveredRuns, RunRef{TenantID: tenantID, RunID: id})
		default:
			v.report.Pruned++
		}
		return nil
	}
	if err != nil {
		return err
	}
	if r.digest != nil && c.Digest() != *r.digest {
		checkpoint = r.covered[0]
		fail(ProblemRunMismatch, "a field of the run was changed: its digest is not the one the ledger recorded (entry %d)", r.entries[0].Seq)
		return nil
	}
	// The stored events that link up from the run's seed, and the head
	// after each.
	heads := make([]Hash, 0, len(c.Events))
	broken := ""
	prev := c.Seed()
	for i := range c.Events {
		e := &c.Events[i]
		switch {
		case e.Seq != i:
			broken = fmt.Sprintf("event %d is numbered %d: an event was deleted, inserted or reordered", i, e.Seq)
		case e.PrevHash != prev && i == 0:
			broken = "event 0 does not start from the run's seed: it belongs to another run, or was moved"
		case e.PrevHash != prev:
			broken = fmt.Sprintf("event %d does not link to the event before it", i)
		case Link(prev, e) != e.Hash:
			broken = fmt.Sprintf("event %d's content does not match its hash", i)
		}
		if broken != "" {
			break
		}
		prev = e.Hash
		heads = append(heads, prev)
	}
	for i, en := range r.entries {
		checkpoint = r.covered[i]
		switch {
		case en.EventCount > len(c.Events):
			fail(ProblemEventsDeleted, "the ledger recorded %d events (entry %d), %d are stored", en.EventCount, en.Seq, len(c.Events))
			return nil
		case en.EventCount > len(heads):
			fail(ProblemEventMismatch, "%s", broken)
			return nil
		case en.EventCount < 1 || heads[en.EventCount-1] != en.Head:
			fail(ProblemChainRewritten, "event %d's hash is not the one the ledger recorded (entry %d): the chain was recomputed",
				en.EventCount-1, en.Seq)
			return nil
		}
	}
	checkpoint = r.covered[last]
	switch {
	case len(c.Events) > latest.EventCount:
		fail(ProblemEventsInserted, "%d events are stored, the ledger recorded %d (entry %d)", len(c.Events), latest.EventCount, latest.Seq)
		return nil
	case c.Head != Head{Count: latest.EventCount, Hash: latest.Head}:
		fail(ProblemHeadMismatch, "the run's head (%d events, %s) is not the one the ledger recorded (entry %d)",
			c.Head.Count, c.Head.Hash, latest.Seq)
		return nil
	}
	v.report.Runs++
	if r.legacy {
		v.report.Legacy++
	}
	if checkpoint == 0 {
		v.report.UncoveredRuns = append(v.report.UncoveredRuns, RunRef{TenantID: tenantID, RunID: id})
	}
	return nil
}

// ParseCheckpoints reads checkpoints kept elsewhere: any sequence of JSON
// values, each a checkpoint, the answer of GET /api/v1/ledger/checkpoints,
// the body of a ledger.checkpoint webhook delivery, or an array of these (a
// file of delivery bodies, one per line, reads as well).
func ParseCheckpoints(r io.Reader) ([]Checkpoint, error) {
	dec := json.NewDecoder(r)
	var out []Checkpoint
	for {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if out, err = appendCheckpoints(out, raw); err != nil {
			return nil, err
		}
	}
}

func appendCheckpoints(out []Checkpoint, raw json.RawMessage) ([]Checkpoint, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '[' {
		var list []json.RawMessage
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, err
		}
		var err error
		for _, item := range list {
			if out, err = appendCheckpoints(out, item); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	var shape struct {
		Checkpoints json.RawMessage `json:"checkpoints"`
		Type        string          `json:"type"`
		Data        json.RawMessage `json:"data"`
		Number      *int64          `json:"number"`
	}
	if err := json.Unmarshal(raw, &shape); err != nil {
		return nil, err
	}
	switch {
	case shape.Checkpoints != nil:
		return appendCheckpoints(out, shape.Checkpoints)
	case shape.Type == CheckpointEvent && shape.Data != nil:
		return appendCheckpoints(out, shape.Data)
	case shape.Type != "":
		return out, nil // another webhook event, in a file of deliveries
	case shape.Number != nil:
		var cp Checkpoint
		if err := json.Unmarshal(raw, &cp); err != nil {
			return nil, err
		}
		return append(out, cp), nil
	}
	return nil, errors.New("not a checkpoint, a list of checkpoints or a ledger.checkpoint delivery")
}
