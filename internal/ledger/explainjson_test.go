package ledger

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/svc-gateway/svc/internal/jsonenc"
	"github.com/svc-gateway/svc/internal/jsonenc/jsonenctest"
)

// appendingDetail stands for a detail type that writes its own JSON, as
// the gateway's do; a nil one writes null, as json.Marshal does.
type appendingDetail struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
}

func (d *appendingDetail) AppendJSON(b []byte) ([]byte, bool) {
	if d == nil {
		return append(b, "null"...), true
	}
	b = append(b, `{"name":`...)
	b = jsonenc.String(b, d.Name)
	b = append(b, `,"value":`...)
	b, ok := jsonenc.Float(b, d.Value)
	return append(b, '}'), ok
}

// randomExplanation draws an explanation from strs and floats: nil and
// empty slices, omitted and present optional fields, open fields nil, a
// typed nil, a JSONAppender or a value only json.Marshal knows.
func randomExplanation(rng *rand.Rand, strs []string, floats []float64) RouteExplanation {
	str := func() string {
		if rng.IntN(3) == 0 {
			return ""
		}
		return strs[rng.IntN(len(strs))]
	}
	open := func() any {
		switch rng.IntN(6) {
		case 0:
			return nil
		case 1:
			return (*appendingDetail)(nil)
		case 2:
			return &appendingDetail{Name: str(), Value: floats[rng.IntN(len(floats))]}
		case 3:
			return map[string]any{"z": str(), "a": []any{str(), 1.5e-7}, "<": nil}
		case 4:
			return []Alternative(nil)
		}
		return []Alternative{{Route: str(), Reason: str()}}
	}
	ex := RouteExplanation{Route: str(), Reason: str(), Policy: Verdict{Decision: str(), Enforced: rng.IntN(2) == 0, ApprovalID: str()},
		Cache: open(), Artifact: open(), EstimatedSavingsUSD: floats[rng.IntN(len(floats))], Fallback: open(),
		Provider: str(), Attempts: open(), Candidates: open()}
	if n := rng.IntN(4); n > 0 {
		ex.Rejected = make([]Alternative, n-1)
		for i := range ex.Rejected {
			ex.Rejected[i] = Alternative{Route: str(), Reason: str(), Provider: str()}
		}
	}
	if n := rng.IntN(4); n > 0 {
		ex.Policy.Rules = make([]RuleResult, n-1)
		for i := range ex.Policy.Rules {
			ex.Policy.Rules[i] = RuleResult{ID: str(), Effect: str(), Reason: str(), Error: str()}
		}
	}
	return ex
}

// explanationMatches checks the hand-written encoding of ex against
// json.Marshal's, a refusal too.
func explanationMatches(t *testing.T, ex RouteExplanation) {
	t.Helper()
	want, werr := json.Marshal(ex)
	got, err := encodeExplanation(&ex)
	if (err == nil) != (werr == nil) || string(got) != string(want) {
		t.Fatalf("explanation %+v\n encoded: %s (%v)\njson.Marshal: %s (%v)", ex, got, err, want, werr)
	}
}

func TestExplanationJSONIsEncodingJSONs(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	strs := jsonenctest.Strings(rng, 500)
	floats := jsonenctest.Floats(rng, 500)
	for range 5000 {
		explanationMatches(t, randomExplanation(rng, strs, floats))
	}
	// What encoding/json refuses is refused alike.
	explanationMatches(t, RouteExplanation{EstimatedSavingsUSD: math.NaN()})
	explanationMatches(t, RouteExplanation{Cache: &appendingDetail{Value: math.Inf(1)}})
	explanationMatches(t, RouteExplanation{Artifact: map[string]any{"x": math.Inf(-1)}})
}

// TestExplanationJSONOfARecord checks the record's explanation is the
// hand-written encoding, and that it is json.Marshal's.
func TestExplanationJSONOfARecord(t *testing.T) {
	rec := sampleRecord("run_1", json.RawMessage(`{"id":"x"}`))
	got, err := rec.ExplanationJSON()
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(rec.Run.Explanation)
	if string(got) != string(want) {
		t.Fatalf("ExplanationJSON: %s\njson.Marshal: %s", got, want)
	}
}

func FuzzExplanationJSON(f *testing.F) {
	f.Add("live", "no <cached> answer & \u2028", "openai", "rule\xff", "deny", 0.0000102, uint8(0))
	f.Fuzz(func(t *testing.T, route, reason, provider, rule, effect string, saved float64, shape uint8) {
		ex := RouteExplanation{Route: route, Reason: reason, Provider: provider, EstimatedSavingsUSD: saved,
			Policy: Verdict{Decision: effect, Enforced: shape&1 != 0, ApprovalID: rule}}
		if shape&2 != 0 {
			ex.Rejected = []Alternative{{Route: route, Reason: reason, Provider: provider}, {Route: rule}}
		}
		if shape&4 != 0 {
			ex.Policy.Rules = []RuleResult{{ID: rule, Effect: effect, Reason: reason, Error: provider}}
		} else if shape&8 != 0 {
			ex.Policy.Rules = []RuleResult{}
		}
		if shape&16 != 0 {
			ex.Cache = &appendingDetail{Name: reason, Value: saved}
		}
		if shape&32 != 0 {
			ex.Attempts = map[string]any{rule: saved, effect: reason}
		}
		if shape&64 != 0 {
			ex.Candidates = (*appendingDetail)(nil)
		}
		explanationMatches(t, ex)
	})
}
