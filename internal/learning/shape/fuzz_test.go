package shape

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzParse: any body either fails to parse or gives a shape whose
// slots put back into the skeleton keep every slot, and whose key does not
// depend on the slots' values.
func FuzzParse(f *testing.F) {
	f.Add("Triage.", "Subject: Card declined\n\nMy card: it fails.")
	f.Add("", "just text")
	f.Add("x", "A: 1\nB c d: 2\nE: http://x\n\nrest")
	f.Add("x", "\n\n\n")
	f.Fuzz(func(t *testing.T, system, user string) {
		body, _ := json.Marshal(map[string]any{"model": "m", "messages": []map[string]string{
			{"role": "system", "content": system}, {"role": "user", "content": user}}})
		sh, err := Parse("app", body)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, s := range sh.Slots {
			if seen[s.Name] && s.Name == "text" {
				t.Fatalf("two free slots in %q", user)
			}
			seen[s.Name] = true
		}
		// The same skeleton with other values is the same pattern.
		var again []string
		for _, line := range strings.Split(sh.Fingerprints.Skeleton, "\n") {
			if line == "" {
				continue
			}
			if i := strings.Index(line, ": {{"); i >= 0 {
				again = append(again, line[:i]+": v")
			} else {
				again = append(again, "\nv")
			}
		}
		body2, _ := json.Marshal(map[string]any{"model": "m", "messages": []map[string]string{
			{"role": "system", "content": system}, {"role": "user", "content": strings.Join(again, "\n")}}})
		other, err := Parse("app", body2)
		if err != nil || other.Key != sh.Key {
			t.Fatalf("%q and %q differ in shape: %q vs %q", user, strings.Join(again, "\n"), sh.Fingerprints.Skeleton, other.Fingerprints.Skeleton)
		}
	})
}
