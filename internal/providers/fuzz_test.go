package providers

import (
	"encoding/json"
	"strings"
	"testing"
)

func jsonOf(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// FuzzParseProvidersFile feeds the parser any document, as YAML and as
// JSON: it never panics, an error always names the file, and a file it
// takes holds only what validation allows.
func FuzzParseProvidersFile(f *testing.F) {
	f.Add([]byte(fullYAML))
	f.Add([]byte(twoMocks))
	f.Add([]byte(`{"providers":[{"name":"a","plugin":"mock","models":["gpt-*"]}],"routes":[{"model":"x","targets":[{"provider":"a","model":"gpt-4o"}]}]}`))
	f.Add([]byte("providers:\n  - &a {name: a, plugin: mock}\n  - *a\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, name := range []string{"p.yaml", "p.json"} {
			file, err := Parse("/etc/svc/"+name, data, testEnv, testFiles)
			if err != nil {
				for _, line := range strings.Split(err.Error(), "\n") {
					if !strings.HasPrefix(line, name+": ") {
						t.Fatalf("an error line does not name the file: %q", line)
					}
				}
				continue
			}
			if len(file.Providers) == 0 {
				t.Fatal("a file without providers was taken")
			}
			names := map[string]*Spec{}
			for i := range file.Providers {
				s := &file.Providers[i]
				if !namePattern.MatchString(s.Name) || names[s.Name] != nil || s.Weight < 1 || s.Timeout <= 0 || len(s.Fingerprint) != 64 {
					t.Fatalf("an invalid provider was taken: %+v", s.Provider)
				}
				names[s.Name] = s
			}
			for _, r := range file.Routes {
				if len(r.Targets) == 0 || (r.Strategy != Ordered && r.Strategy != Weighted) {
					t.Fatalf("an invalid route was taken: %+v", r)
				}
				for _, tg := range r.Targets {
					if names[tg.Provider] == nil {
						t.Fatalf("a route to no provider was taken: %+v", r)
					}
				}
			}
		}
	})
}
