package tracing

import (
	"fmt"
	"testing"
)

// forgetNames empties the kept names when a test ends, so that no test
// depends on which ran before it.
func forgetNames(t *testing.T) {
	t.Cleanup(func() {
		names.mu.Lock()
		names.m = nil
		names.mu.Unlock()
	})
}

func TestOperationName(t *testing.T) {
	forgetNames(t)
	if got := OperationName("chat", "gpt-4o-mini"); got != "chat gpt-4o-mini" {
		t.Fatalf("OperationName = %q", got)
	}
	if got := OperationName("embeddings", "gpt-4o-mini"); got != "embeddings gpt-4o-mini" {
		t.Fatalf("OperationName = %q", got)
	}
	if got := OperationName("chat", ""); got != "chat " {
		t.Fatalf("OperationName with no model = %q", got)
	}
	// A name already made is shared, not made again.
	OperationName("chat", "shared-model")
	if n := testing.AllocsPerRun(100, func() { OperationName("chat", "shared-model") }); n != 0 {
		t.Fatalf("a known name allocates %v times", n)
	}
}

func TestOperationNameBounded(t *testing.T) {
	forgetNames(t)
	for i := range 2 * maxNames {
		model := fmt.Sprintf("model-%d", i)
		if got := OperationName("chat", model); got != "chat "+model {
			t.Fatalf("OperationName = %q, want %q", got, "chat "+model)
		}
	}
	names.mu.RLock()
	n := len(names.m)
	names.mu.RUnlock()
	if n > maxNames {
		t.Fatalf("%d names kept, more than %d", n, maxNames)
	}
}
