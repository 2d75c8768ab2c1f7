package tracing

import "sync"

// maxNames bounds the span names kept: models are named by callers, so a
// caller that sends a new model every call cannot grow the cache past it
// (those names are then made for each span, as before).
const maxNames = 512

// names holds the span names made so far, keyed by operation and model.
var names struct {
	mu sync.RWMutex
	m  map[nameKey]string
}

type nameKey struct{ op, model string }

// OperationName is a GenAI span's name, "op model" ("chat gpt-4o-mini"),
// made once for each operation and model and then shared: a call names
// two spans so, and each name would otherwise be a new string every call.
func OperationName(op, model string) string {
	k := nameKey{op, model}
	names.mu.RLock()
	name, ok := names.m[k]
	names.mu.RUnlock()
	if ok {
		return name
	}
	name = op + " " + model
	names.mu.Lock()
	if names.m == nil {
		names.m = make(map[nameKey]string)
	}
	if len(names.m) < maxNames {
		names.m[nameKey{name[:len(op)], name[len(op)+1:]}] = name
	}
	names.mu.Unlock()
	return name
}
