package ledger

import (
	"encoding/json"

	"github.com/svc-gateway/svc/internal/jsonenc"
)

// A run's route explanation is encoded on every call's path, so it is
// written by hand rather than by reflection, byte for byte as json.Marshal
// writes it: its digest and every stored copy hash those bytes.

// JSONAppender is a value of a route explanation's open fields (Cache,
// Artifact, Fallback, Attempts, Candidates) that writes its own JSON: it
// appends to dst the bytes json.Marshal gives the value, or reports false
// to leave the whole explanation to json.Marshal.
type JSONAppender interface {
	AppendJSON(dst []byte) ([]byte, bool)
}

// explanationSize is room for the explanation of a live call with a
// provider's attempt and candidates, so that its encoding grows no buffer.
const explanationSize = 768

// encodeExplanation returns json.Marshal(ex)'s bytes.
func encodeExplanation(ex *RouteExplanation) ([]byte, error) {
	if b, ok := ex.appendJSON(make([]byte, 0, explanationSize)); ok {
		return b, nil
	}
	return json.Marshal(ex)
}

func (ex *RouteExplanation) appendJSON(b []byte) ([]byte, bool) {
	var ok bool
	b = append(b, `{"route":`...)
	b = jsonenc.String(b, ex.Route)
	b = append(b, `,"reason":`...)
	b = jsonenc.String(b, ex.Reason)
	b = append(b, `,"rejected":`...)
	if ex.Rejected == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range ex.Rejected {
			if i > 0 {
				b = append(b, ',')
			}
			b = ex.Rejected[i].appendJSON(b)
		}
		b = append(b, ']')
	}
	b = append(b, `,"policy":`...)
	b = ex.Policy.appendJSON(b)
	b = append(b, `,"cache":`...)
	if b, ok = appendAny(b, ex.Cache); !ok {
		return b, false
	}
	b = append(b, `,"artifact":`...)
	if b, ok = appendAny(b, ex.Artifact); !ok {
		return b, false
	}
	b = append(b, `,"estimatedSavingsUsd":`...)
	if b, ok = jsonenc.Float(b, ex.EstimatedSavingsUSD); !ok {
		return b, false
	}
	b = append(b, `,"fallback":`...)
	if b, ok = appendAny(b, ex.Fallback); !ok {
		return b, false
	}
	if ex.Provider != "" {
		b = append(b, `,"provider":`...)
		b = jsonenc.String(b, ex.Provider)
	}
	if ex.Attempts != nil { // omitempty omits a nil interface only
		b = append(b, `,"attempts":`...)
		if b, ok = appendAny(b, ex.Attempts); !ok {
			return b, false
		}
	}
	if ex.Candidates != nil {
		b = append(b, `,"candidates":`...)
		if b, ok = appendAny(b, ex.Candidates); !ok {
			return b, false
		}
	}
	return append(b, '}'), true
}

func (a *Alternative) appendJSON(b []byte) []byte {
	b = append(b, `{"route":`...)
	b = jsonenc.String(b, a.Route)
	b = append(b, `,"reason":`...)
	b = jsonenc.String(b, a.Reason)
	if a.Provider != "" {
		b = append(b, `,"provider":`...)
		b = jsonenc.String(b, a.Provider)
	}
	return append(b, '}')
}

func (v *Verdict) appendJSON(b []byte) []byte {
	b = append(b, `{"decision":`...)
	b = jsonenc.String(b, v.Decision)
	b = append(b, `,"rules":`...)
	b = AppendRules(b, v.Rules)
	b = append(b, `,"enforced":`...)
	b = jsonenc.Bool(b, v.Enforced)
	if v.ApprovalID != "" {
		b = append(b, `,"approvalId":`...)
		b = jsonenc.String(b, v.ApprovalID)
	}
	return append(b, '}')
}

// AppendRules appends rules as json.Marshal writes them: null when nil.
func AppendRules(b []byte, rules []RuleResult) []byte {
	if rules == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i := range rules {
		if i > 0 {
			b = append(b, ',')
		}
		r := &rules[i]
		b = append(b, `{"id":`...)
		b = jsonenc.String(b, r.ID)
		b = append(b, `,"effect":`...)
		b = jsonenc.String(b, r.Effect)
		b = append(b, `,"reason":`...)
		b = jsonenc.String(b, r.Reason)
		if r.Error != "" {
			b = append(b, `,"error":`...)
			b = jsonenc.String(b, r.Error)
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

// appendAny appends an open field: null when nil, a JSONAppender's own
// bytes, else json.Marshal's (the bytes it writes for a field holding v).
func appendAny(b []byte, v any) ([]byte, bool) {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), true
	case JSONAppender:
		return v.AppendJSON(b)
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return b, false
	}
	return append(b, raw...), true
}
