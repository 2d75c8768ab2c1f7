package gateway

// The JSON of a run's events and of its route explanation's details is
// written by hand on every call's path, byte for byte as json.Marshal
// writes it: the ledger's chain and the run's digest hash those bytes.
// eventjson_test.go compares each encoder with json.Marshal.

import (
	"encoding/json"

	"github.com/svc-gateway/svc/internal/jsonenc"
	"github.com/svc-gateway/svc/internal/ledger"
	"github.com/svc-gateway/svc/internal/providers"
)

// payloadEncoder is an event payload that writes its own JSON, or reports
// false to leave it to json.Marshal.
type payloadEncoder interface {
	appendJSON(dst []byte) ([]byte, bool)
}

// payloadSize is room for most events' payloads.
const payloadSize = 192

// payload is v's JSON, as mustJSON(v) is.
func payload[T payloadEncoder](v T) json.RawMessage {
	if b, ok := v.appendJSON(make([]byte, 0, payloadSize)); ok {
		return b
	}
	return mustJSON(v)
}

func (e requestEvent) appendJSON(b []byte) ([]byte, bool) {
	if len(e.Origin) > 0 {
		return b, false // json.Marshal checks and compacts it
	}
	b = append(b, `{"model":`...)
	b = jsonenc.String(b, e.Model)
	b = append(b, `,"stream":`...)
	b = jsonenc.Bool(b, e.Stream)
	b = append(b, `,"messages":`...)
	b = jsonenc.Int(b, int64(e.Messages))
	b = append(b, `,"tools":`...)
	b = jsonenc.Int(b, int64(e.Tools))
	b = append(b, `,"app":`...)
	b = jsonenc.String(b, e.App)
	b = append(b, `,"agent":`...)
	b = jsonenc.String(b, e.Agent)
	b = append(b, `,"subject":`...)
	b = jsonenc.String(b, e.Subject)
	b = append(b, `,"mode":`...)
	b = jsonenc.String(b, e.Mode)
	return append(b, '}'), true
}

func (e routeEvent) appendJSON(b []byte) ([]byte, bool) {
	b = append(b, `{"route":`...)
	b = jsonenc.String(b, e.Route)
	b = append(b, `,"reason":`...)
	b = jsonenc.String(b, e.Reason)
	b = append(b, `,"policy":`...)
	b = jsonenc.String(b, e.Policy)
	return append(b, '}'), true
}

func (e providerEvent) appendJSON(b []byte) ([]byte, bool) {
	var ok bool
	b = append(b, `{"provider":`...)
	b = jsonenc.String(b, e.Provider)
	b = append(b, `,"status":`...)
	b = jsonenc.Int(b, int64(e.Status))
	if e.PromptTokens != 0 {
		b = append(b, `,"promptTokens":`...)
		b = jsonenc.Int(b, e.PromptTokens)
	}
	if e.CompletionTokens != 0 {
		b = append(b, `,"completionTokens":`...)
		b = jsonenc.Int(b, e.CompletionTokens)
	}
	if e.UsageUnknown {
		b = append(b, `,"usageUnknown":true`...)
	}
	if e.CostUSD != 0 {
		b = append(b, `,"costUsd":`...)
		if b, ok = jsonenc.Float(b, e.CostUSD); !ok {
			return b, false
		}
	}
	b = append(b, `,"latencyMs":`...)
	if b, ok = jsonenc.Float(b, e.LatencyMS); !ok {
		return b, false
	}
	if e.Error != "" {
		b = append(b, `,"error":`...)
		b = jsonenc.String(b, e.Error)
	}
	if e.Attempt != 0 {
		b = append(b, `,"attempt":`...)
		b = jsonenc.Int(b, int64(e.Attempt))
	}
	if e.UpstreamStatus != 0 {
		b = append(b, `,"upstreamStatus":`...)
		b = jsonenc.Int(b, int64(e.UpstreamStatus))
	}
	if e.Code != "" {
		b = append(b, `,"code":`...)
		b = jsonenc.String(b, e.Code)
	}
	return append(b, '}'), true
}

func (e cacheHitEvent) appendJSON(b []byte) ([]byte, bool) {
	var ok bool
	b = append(b, `{"tier":`...)
	b = jsonenc.String(b, e.Tier)
	b = append(b, `,"sourceRunId":`...)
	b = jsonenc.String(b, e.SourceRunID)
	b = append(b, `,"storedAt":`...)
	if b, ok = jsonenc.Time(b, e.StoredAt); !ok {
		return b, false
	}
	b = append(b, `,"fallback":`...)
	b = jsonenc.Bool(b, e.Fallback)
	return appendSaved(b, e.SavedUSD, e.SavedMS)
}

func (e artifactServedEvent) appendJSON(b []byte) ([]byte, bool) {
	b = append(b, `{"artifactId":`...)
	b = jsonenc.String(b, e.ArtifactID)
	b = append(b, `,"patternId":`...)
	b = jsonenc.String(b, e.PatternID)
	b = append(b, `,"type":`...)
	b = jsonenc.String(b, e.Type)
	return appendSaved(b, e.SavedUSD, e.SavedMS)
}

// appendSaved ends an event's object with its savedUsd and savedMs.
func appendSaved(b []byte, usd, ms float64) ([]byte, bool) {
	var ok bool
	b = append(b, `,"savedUsd":`...)
	if b, ok = jsonenc.Float(b, usd); !ok {
		return b, false
	}
	b = append(b, `,"savedMs":`...)
	if b, ok = jsonenc.Float(b, ms); !ok {
		return b, false
	}
	return append(b, '}'), true
}

func (e verdictEvent) appendJSON(b []byte) ([]byte, bool) {
	b = append(b, `{"target":`...)
	b = jsonenc.String(b, e.Target)
	if e.Tool != "" {
		b = append(b, `,"tool":`...)
		b = jsonenc.String(b, e.Tool)
	}
	if e.Provider != "" {
		b = append(b, `,"provider":`...)
		b = jsonenc.String(b, e.Provider)
	}
	b = append(b, `,"decision":`...)
	b = jsonenc.String(b, e.Decision)
	b = append(b, `,"rules":`...)
	b = ledger.AppendRules(b, e.Rules)
	b = append(b, `,"enforced":`...)
	b = jsonenc.Bool(b, e.Enforced)
	if e.ApprovalID != "" {
		b = append(b, `,"approvalId":`...)
		b = jsonenc.String(b, e.ApprovalID)
	}
	return append(b, '}'), true
}

// The details a route explanation holds write their own JSON
// (ledger.JSONAppender).
var (
	_ ledger.JSONAppender = (*cacheDetail)(nil)
	_ ledger.JSONAppender = (*fallbackDetail)(nil)
	_ ledger.JSONAppender = (*providerFallback)(nil)
	_ ledger.JSONAppender = attemptList(nil)
	_ ledger.JSONAppender = candidateList(nil)
)

func (d *cacheDetail) AppendJSON(b []byte) ([]byte, bool) {
	if d == nil {
		return append(b, "null"...), true
	}
	var ok bool
	b = append(b, `{"tier":`...)
	b = jsonenc.String(b, string(d.Tier))
	b = append(b, `,"cacheable":`...)
	b = jsonenc.Bool(b, d.Cacheable)
	b = append(b, `,"lookup":`...)
	b = jsonenc.String(b, d.Lookup)
	b = append(b, `,"served":`...)
	b = jsonenc.Bool(b, d.Served)
	if d.SourceRunID != "" {
		b = append(b, `,"sourceRunId":`...)
		b = jsonenc.String(b, d.SourceRunID)
	}
	if d.StoredAt != nil {
		b = append(b, `,"storedAt":`...)
		if b, ok = jsonenc.Time(b, *d.StoredAt); !ok {
			return b, false
		}
	}
	if d.ExpiresAt != nil {
		b = append(b, `,"expiresAt":`...)
		if b, ok = jsonenc.Time(b, *d.ExpiresAt); !ok {
			return b, false
		}
	}
	return append(b, '}'), true
}

func (d *fallbackDetail) AppendJSON(b []byte) ([]byte, bool) {
	if d == nil {
		return append(b, "null"...), true
	}
	var ok bool
	b = append(b, `{"used":`...)
	b = jsonenc.Bool(b, d.Used)
	b = append(b, `,"reason":`...)
	b = jsonenc.String(b, d.Reason)
	b = append(b, `,"tier":`...)
	b = jsonenc.String(b, string(d.Tier))
	b = append(b, `,"stale":`...)
	b = jsonenc.Bool(b, d.Stale)
	b = append(b, `,"storedAt":`...)
	if b, ok = jsonenc.Time(b, d.StoredAt); !ok {
		return b, false
	}
	return append(b, '}'), true
}

func (d *providerFallback) AppendJSON(b []byte) ([]byte, bool) {
	if d == nil {
		return append(b, "null"...), true
	}
	b = append(b, `{"used":`...)
	b = jsonenc.Bool(b, d.Used)
	b = append(b, `,"tier":`...)
	b = jsonenc.String(b, d.Tier)
	b = append(b, `,"provider":`...)
	b = jsonenc.String(b, d.Provider)
	b = append(b, `,"from":`...)
	b = jsonenc.String(b, d.From)
	b = append(b, `,"reason":`...)
	b = jsonenc.String(b, d.Reason)
	return append(b, '}'), true
}

// attemptList is a route explanation's attempts: JSON as json.Marshal
// writes a []providers.Attempt.
type attemptList []providers.Attempt

func (l attemptList) AppendJSON(b []byte) ([]byte, bool) {
	if l == nil {
		return append(b, "null"...), true
	}
	var ok bool
	b = append(b, '[')
	for i := range l {
		a := &l[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"provider":`...)
		b = jsonenc.String(b, a.Provider)
		b = append(b, `,"model":`...)
		b = jsonenc.String(b, a.Model)
		b = append(b, `,"outcome":`...)
		b = jsonenc.String(b, a.Outcome)
		if a.Status != 0 {
			b = append(b, `,"status":`...)
			b = jsonenc.Int(b, int64(a.Status))
		}
		b = append(b, `,"latencyMs":`...)
		if b, ok = jsonenc.Float(b, a.LatencyMS); !ok {
			return b, false
		}
		if a.Error != "" {
			b = append(b, `,"error":`...)
			b = jsonenc.String(b, a.Error)
		}
		if a.RetryAfterMS != 0 {
			b = append(b, `,"retryAfterMs":`...)
			b = jsonenc.Int(b, a.RetryAfterMS)
		}
		if a.WaitedMS != 0 {
			b = append(b, `,"waitedMs":`...)
			if b, ok = jsonenc.Float(b, a.WaitedMS); !ok {
				return b, false
			}
		}
		b = append(b, '}')
	}
	return append(b, ']'), true
}

// candidateList is a route explanation's candidates: JSON as json.Marshal
// writes a []providers.Candidate.
type candidateList []providers.Candidate

func (l candidateList) AppendJSON(b []byte) ([]byte, bool) {
	if l == nil {
		return append(b, "null"...), true
	}
	b = append(b, '[')
	for i := range l {
		c := &l[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"provider":`...)
		b = jsonenc.String(b, c.Provider)
		b = append(b, `,"plugin":`...)
		b = jsonenc.String(b, c.Plugin)
		b = append(b, `,"model":`...)
		b = jsonenc.String(b, c.Model)
		b = append(b, '}')
	}
	return append(b, ']'), true
}
