// Package shareddata finds and reads the real-world test data that lives
// beside the repository, in ../shared/data (web pages, SSRF address cases,
// labelled email): tests read it in place, and skip, saying so, where it is
// absent.
package shareddata

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// Dir returns ../shared/data/<parts...> beside the module root (the folder
// holding go.mod above the test's working directory). Without it the test
// is skipped with a message naming what did not run.
func Dir(tb testing.TB, parts ...string) string {
	tb.Helper()
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			tb.Skipf("SKIPPED: no go.mod above %s: the tests that need ../shared/data did not run", dir)
		}
		dir = parent
	}
	data := filepath.Join(append([]string{dir, "..", "shared", "data"}, parts...)...)
	if _, err := os.Stat(data); err != nil {
		tb.Skipf("SKIPPED: %s not found: the tests that read it did not run", data)
	}
	return data
}

// Message is one labelled email of ../shared/data/spam.
type Message struct {
	ID      string `json:"id"`
	Label   string `json:"label"` // spam or ham
	Subject string `json:"subject"`
	Text    string `json:"text"`
}

// SpamMessages reads the labelled email messages, skipping the test where
// they are absent.
func SpamMessages(tb testing.TB) []Message {
	tb.Helper()
	f, err := os.Open(filepath.Join(Dir(tb, "spam"), "messages.jsonl"))
	if err != nil {
		tb.Skipf("SKIPPED: the labelled spam corpus cannot be read (%v); the tests that learn from real mail did not run", err)
	}
	defer f.Close()
	var out []Message
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m Message
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			tb.Fatalf("spam corpus: %v", err)
		}
		out = append(out, m)
	}
	if err := sc.Err(); err != nil {
		tb.Fatalf("spam corpus: %v", err)
	}
	if len(out) == 0 {
		tb.Fatal("spam corpus: no messages")
	}
	return out
}
