package synth

import (
	"encoding/json"
	"testing"

	"github.com/svc-gateway/svc/internal/learning/shape"
)

// FuzzClassifier: a classifier answers or abstains on the shape of any
// request, and tokenizes its slot text, without panicking.
func FuzzClassifier(f *testing.F) {
	f.Add("Triage.", "Subject: Card declined\n\nMy card: it fails.")
	f.Add("", "just text")
	f.Add("x", "A: 1\nB c d: 2\nE: http://x\n\nrest")
	f.Add("x", "\n\n\n")
	f.Fuzz(func(t *testing.T, system, user string) {
		body, _ := json.Marshal(map[string]any{"model": "m", "messages": []map[string]string{
			{"role": "system", "content": system}, {"role": "user", "content": user}}})
		sh, err := shape.Parse("app", body)
		if err != nil {
			return
		}
		_, _ = (&Classifier{Labels: []string{"a", "b"}, LogPrior: []float64{0, 0}, Weights: map[string][]float64{}}).Answer(sh)
		_ = tokenize(sh.SlotText())
	})
}
