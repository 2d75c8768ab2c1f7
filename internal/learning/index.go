package learning

import (
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/svc-gateway/svc/internal/learning/synth"
)

// Served is an artifact ready in memory: compiled once when it entered the
// index, so that a request pays only for its answer.
type Served struct {
	ArtifactID  string
	PatternID   string
	Type        string
	State       string
	SideEffects bool
	Answerer    synth.Answerer
	// The pattern's live averages: what an answer from the artifact saves.
	AvgCostUSD   float64
	AvgLatencyMS float64
}

// Entry is what the index holds for one shape: the promoted artifact that
// serves, and the shadow artifact scored beside live calls.
type Entry struct {
	Promoted *Served
	Shadow   *Served
}

// Index maps a tenant's request shapes to their artifacts. Reads take a
// read lock and one map lookup.
type Index struct {
	mu sync.RWMutex
	m  map[string]map[string]Entry // tenant → shape key → entry
	// What Refresh compares: each tenant's last set's signature, and how
	// many sets it has had.
	sig   map[string]string
	loads map[string]uint64
}

func newIndex() *Index {
	return &Index{m: map[string]map[string]Entry{}, sig: map[string]string{}, loads: map[string]uint64{}}
}

// signature is the signature of the tenant's last set.
func (ix *Index) signature(tenantID string) string {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.sig[tenantID]
}

// loadCount is how many times the tenant's entries were set or forgotten.
func (ix *Index) loadCount(tenantID string) uint64 {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.loads[tenantID]
}

// loadCounts is loadCount of every tenant the index has met.
func (ix *Index) loadCounts() map[string]uint64 {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	out := make(map[string]uint64, len(ix.loads))
	for t, n := range ix.loads {
		out[t] = n
	}
	return out
}

// forget takes the tenant out of the index.
func (ix *Index) forget(tenantID string) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	delete(ix.m, tenantID)
	delete(ix.sig, tenantID)
	delete(ix.loads, tenantID)
}

// Match returns the entry of a request shape; false when no artifact
// answers it.
func (ix *Index) Match(tenantID, shapeKey string) (Entry, bool) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	e, ok := ix.m[tenantID][shapeKey]
	return e, ok
}

// Empty reports whether the tenant has no artifact at all, so that the
// gateway skips fingerprinting its requests.
func (ix *Index) Empty(tenantID string) bool {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return len(ix.m[tenantID]) == 0
}

// sideEffects reports whether the artifact, in the index, bears side
// effects (its pattern offers tools).
func (ix *Index) sideEffects(tenantID, artifactID string) bool {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	for _, e := range ix.m[tenantID] {
		for _, s := range []*Served{e.Promoted, e.Shadow} {
			if s != nil && s.ArtifactID == artifactID {
				return s.SideEffects
			}
		}
	}
	return false
}

// set replaces a tenant's entries by rows, compiling each artifact.
func (ix *Index) set(tenantID string, rows []ServingRow, logger hclog.Logger) {
	m := map[string]Entry{}
	for _, r := range rows {
		a := r.Artifact
		ans, err := synth.Compile(a.Type, a.Representation)
		if err != nil {
			logger.Error("an artifact cannot be compiled; it does not serve", "artifact", a.ID, "error", err)
			continue
		}
		s := &Served{ArtifactID: a.ID, PatternID: a.PatternID, Type: a.Type, State: a.State, SideEffects: a.SideEffects,
			Answerer: ans, AvgCostUSD: r.Pattern.AvgCostUSD, AvgLatencyMS: r.Pattern.AvgLatencyMS}
		e := m[r.Pattern.Key]
		switch a.State {
		case synth.ArtifactPromoted:
			e.Promoted = s
		case synth.ArtifactShadow:
			if e.Shadow == nil || a.CreatedAt.After(createdOf(rows, e.Shadow.ArtifactID)) {
				e.Shadow = s
			}
		default:
			continue
		}
		m[r.Pattern.Key] = e
	}
	sig := signature(rows)
	ix.mu.Lock()
	ix.m[tenantID] = m
	ix.sig[tenantID] = sig
	ix.loads[tenantID]++
	ix.mu.Unlock()
}

// drop takes an artifact out of the index at once.
func (ix *Index) drop(tenantID, artifactID string) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	for k, e := range ix.m[tenantID] {
		if e.Promoted != nil && e.Promoted.ArtifactID == artifactID {
			e.Promoted = nil
		}
		if e.Shadow != nil && e.Shadow.ArtifactID == artifactID {
			e.Shadow = nil
		}
		if e.Promoted == nil && e.Shadow == nil {
			delete(ix.m[tenantID], k)
		} else {
			ix.m[tenantID][k] = e
		}
	}
}

func createdOf(rows []ServingRow, id string) (t time.Time) {
	for _, r := range rows {
		if r.Artifact.ID == id {
			return r.Artifact.CreatedAt
		}
	}
	return t
}
