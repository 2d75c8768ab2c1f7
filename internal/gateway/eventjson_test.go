package gateway

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/svc-gateway/svc/internal/cache"
	"github.com/svc-gateway/svc/internal/jsonenc/jsonenctest"
	"github.com/svc-gateway/svc/internal/ledger"
	"github.com/svc-gateway/svc/internal/providers"
)

// encoded is what the hand-written encoder of v writes, and whether it
// wrote it.
type encoded struct {
	b  []byte
	ok bool
}

// sameAsMarshal checks the hand-written encoding of v against want,
// json.Marshal's bytes of the value as the code held it before (a
// []providers.Attempt, not an attemptList): equal bytes, or, where the
// encoder stands down, bytes json.Marshal refuses or that it is left to.
func sameAsMarshal(t *testing.T, got encoded, want any) {
	t.Helper()
	w, err := json.Marshal(want)
	switch {
	case got.ok && (err != nil || string(got.b) != string(w)):
		t.Fatalf("%#v\n encoded: %s\njson.Marshal: %s (%v)", want, got.b, w, err)
	case !got.ok && err == nil:
		if e, isRequest := want.(requestEvent); !isRequest || len(e.Origin) == 0 {
			t.Fatalf("%#v: the encoder stood down, json.Marshal encodes it: %s", want, w)
		}
	}
}

func enc(b []byte, ok bool) encoded { return encoded{b, ok} }

// gen draws field values from strings and floats made to hit every branch
// of encoding/json's writers, zero values often (omitempty).
type gen struct {
	rng    *rand.Rand
	strs   []string
	floats []float64
}

func newGen(seed uint64) *gen {
	rng := rand.New(rand.NewPCG(seed, seed+1))
	g := &gen{rng: rng, strs: jsonenctest.Strings(rng, 400), floats: jsonenctest.Floats(rng, 400)}
	g.floats = append(g.floats, math.NaN(), math.Inf(1)) // refused alike
	return g
}

func (g *gen) str() string {
	if g.rng.IntN(3) == 0 {
		return ""
	}
	return g.strs[g.rng.IntN(len(g.strs))]
}

func (g *gen) float() float64 {
	if g.rng.IntN(3) == 0 {
		return 0
	}
	return g.floats[g.rng.IntN(len(g.floats))]
}

func (g *gen) int() int64 {
	switch g.rng.IntN(4) {
	case 0:
		return 0
	case 1:
		return -g.rng.Int64()
	}
	return g.rng.Int64N(1 << uint(g.rng.IntN(62)+1))
}

func (g *gen) bool() bool { return g.rng.IntN(2) == 0 }

func (g *gen) time() time.Time {
	at := time.Unix(g.rng.Int64N(1<<36)-1<<35, g.rng.Int64N(1e9))
	if g.rng.IntN(50) == 0 {
		at = time.Date(10000+g.rng.IntN(100), 1, 1, 0, 0, 0, 0, time.UTC) // refused alike
	}
	if g.bool() {
		return at.UTC()
	}
	return at.In(time.FixedZone("", (g.rng.IntN(48*60)-24*60)*60))
}

func (g *gen) timePtr() *time.Time {
	if g.bool() {
		return nil
	}
	at := g.time()
	return &at
}

func (g *gen) rules() []ledger.RuleResult {
	n := g.rng.IntN(4)
	if n == 0 {
		return nil
	}
	rules := make([]ledger.RuleResult, n-1)
	for i := range rules {
		rules[i] = ledger.RuleResult{ID: g.str(), Effect: g.str(), Reason: g.str(), Error: g.str()}
	}
	return rules
}

func TestEventPayloadsAreEncodingJSONs(t *testing.T) {
	g := newGen(11)
	for range 3000 {
		req := requestEvent{Model: g.str(), Stream: g.bool(), Messages: int(g.int()), Tools: int(g.int()), App: g.str(),
			Agent: g.str(), Subject: g.str(), Mode: g.str()}
		if g.rng.IntN(4) == 0 {
			req.Origin = json.RawMessage(`{"instructions": "<be brief>"}`)
		}
		sameAsMarshal(t, enc(req.appendJSON(nil)), req)
		route := routeEvent{Route: g.str(), Reason: g.str(), Policy: g.str()}
		sameAsMarshal(t, enc(route.appendJSON(nil)), route)
		prov := providerEvent{Provider: g.str(), Status: int(g.int()), PromptTokens: g.int(), CompletionTokens: g.int(),
			UsageUnknown: g.bool(), CostUSD: g.float(), LatencyMS: g.float(), Error: g.str(), Attempt: int(g.int()), UpstreamStatus: int(g.int()), Code: g.str()}
		sameAsMarshal(t, enc(prov.appendJSON(nil)), prov)
		hit := cacheHitEvent{Tier: g.str(), SourceRunID: g.str(), StoredAt: g.time(), Fallback: g.bool(), SavedUSD: g.float(), SavedMS: g.float()}
		sameAsMarshal(t, enc(hit.appendJSON(nil)), hit)
		art := artifactServedEvent{ArtifactID: g.str(), PatternID: g.str(), Type: g.str(), SavedUSD: g.float(), SavedMS: g.float()}
		sameAsMarshal(t, enc(art.appendJSON(nil)), art)
		verdict := verdictEvent{Target: g.str(), Tool: g.str(), Provider: g.str(), Decision: g.str(), Rules: g.rules(),
			Enforced: g.bool(), ApprovalID: g.str()}
		sameAsMarshal(t, enc(verdict.appendJSON(nil)), verdict)
	}
}

func TestExplanationDetailsAreEncodingJSONs(t *testing.T) {
	g := newGen(13)
	for range 3000 {
		cd := &cacheDetail{Tier: cache.Tier(g.str()), Cacheable: g.bool(), Lookup: g.str(), Served: g.bool(), SourceRunID: g.str(),
			StoredAt: g.timePtr(), ExpiresAt: g.timePtr()}
		sameAsMarshal(t, enc(cd.AppendJSON(nil)), cd)
		fb := &fallbackDetail{Used: g.bool(), Reason: g.str(), Tier: cache.Tier(g.str()), Stale: g.bool(), StoredAt: g.time()}
		sameAsMarshal(t, enc(fb.AppendJSON(nil)), fb)
		pf := &providerFallback{Used: g.bool(), Tier: g.str(), Provider: g.str(), From: g.str(), Reason: g.str()}
		sameAsMarshal(t, enc(pf.AppendJSON(nil)), pf)
		var attempts []providers.Attempt
		var cands []providers.Candidate
		if n := g.rng.IntN(4); n > 0 {
			attempts, cands = make([]providers.Attempt, n-1), make([]providers.Candidate, n-1)
			for i := range attempts {
				attempts[i] = providers.Attempt{Provider: g.str(), Model: g.str(), Outcome: g.str(), Status: int(g.int()),
					LatencyMS: g.float(), Error: g.str(), RetryAfterMS: g.int(), WaitedMS: g.float()}
				cands[i] = providers.Candidate{Provider: g.str(), Plugin: g.str(), Model: g.str()}
			}
		}
		sameAsMarshal(t, enc(attemptList(attempts).AppendJSON(nil)), attempts)
		sameAsMarshal(t, enc(candidateList(cands).AppendJSON(nil)), cands)
	}
	for _, v := range []ledger.JSONAppender{(*cacheDetail)(nil), (*fallbackDetail)(nil), (*providerFallback)(nil)} {
		sameAsMarshal(t, enc(v.AppendJSON(nil)), v)
	}
}

// TestPayloadFallsBackToMarshal checks a payload the encoder leaves to
// json.Marshal is json.Marshal's: an origin is checked and compacted.
func TestPayloadFallsBackToMarshal(t *testing.T) {
	e := requestEvent{Model: "m", Origin: json.RawMessage(`{ "instructions" : "<be brief>" }`)}
	want, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	if got := payload(e); string(got) != string(want) {
		t.Fatalf("payload: %s\njson.Marshal: %s", got, want)
	}
}

func FuzzEventJSON(f *testing.F) {
	f.Add("openai", "the provider <failed> & \u2028", int64(24), 0.0000102, 10.9, int64(1_700_000_000_123), true)
	f.Fuzz(func(t *testing.T, s1, s2 string, n int64, x, y float64, ms int64, flag bool) {
		prov := providerEvent{Provider: s1, Status: int(n), PromptTokens: n, CompletionTokens: -n, UsageUnknown: flag, CostUSD: x,
			LatencyMS: y, Error: s2, Attempt: int(n >> 1), UpstreamStatus: int(n), Code: s1}
		sameAsMarshal(t, enc(prov.appendJSON(nil)), prov)
		req := requestEvent{Model: s1, Stream: flag, Messages: int(n), Tools: int(-n), App: s2, Agent: s1, Subject: s2, Mode: s1}
		sameAsMarshal(t, enc(req.appendJSON(nil)), req)
		route := routeEvent{Route: s1, Reason: s2, Policy: s1}
		sameAsMarshal(t, enc(route.appendJSON(nil)), route)
		at := time.UnixMilli(ms).In(time.FixedZone("", int(n%(48*3600))))
		hit := cacheHitEvent{Tier: s1, SourceRunID: s2, StoredAt: at, Fallback: flag, SavedUSD: x, SavedMS: y}
		sameAsMarshal(t, enc(hit.appendJSON(nil)), hit)
		cd := &cacheDetail{Tier: cache.Tier(s1), Lookup: s2, Cacheable: flag, SourceRunID: s1, StoredAt: &at}
		sameAsMarshal(t, enc(cd.AppendJSON(nil)), cd)
		attempts := []providers.Attempt{{Provider: s1, Model: s2, Outcome: s1, Status: int(n), LatencyMS: x, Error: s2, RetryAfterMS: n, WaitedMS: y}}
		sameAsMarshal(t, enc(attemptList(attempts).AppendJSON(nil)), attempts)
		verdict := verdictEvent{Target: s1, Tool: s2, Decision: s1, Rules: []ledger.RuleResult{{ID: s1, Effect: s2, Reason: s1, Error: s2}}, Enforced: flag}
		sameAsMarshal(t, enc(verdict.appendJSON(nil)), verdict)
	})
}
