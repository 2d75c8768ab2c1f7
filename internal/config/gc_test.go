package config_test

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/svc-gateway/svc/internal/config"
)

// lookupIn is os.LookupEnv over a fixed environment.
func lookupIn(kv map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := kv[k]
		return v, ok
	}
}

// svc sets its GC percent only when the operator set neither GOGC nor
// GOMEMLIMIT, and plugins get the operator's GOGC or svc's default.
func TestSvcSetsItsGCPercentUnlessTheOperatorDid(t *testing.T) {
	before := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(before) })

	for _, set := range []map[string]string{{"GOGC": "100"}, {"GOMEMLIMIT": "1GiB"}, {"GOGC": "off", "GOMEMLIMIT": "1GiB"}} {
		assert.False(t, config.SetGC(lookupIn(set)), "%v", set)
		assert.Equal(t, 100, debug.SetGCPercent(100), "left as it was with %v", set)
	}
	assert.True(t, config.SetGC(lookupIn(nil)))
	assert.Equal(t, config.GCPercent, debug.SetGCPercent(100))

	assert.Equal(t, "400", config.PluginGOGC(lookupIn(nil)))
	assert.Equal(t, "400", config.PluginGOGC(lookupIn(map[string]string{"GOMEMLIMIT": "1GiB"})), "a limit is svc's own")
	assert.Equal(t, "150", config.PluginGOGC(lookupIn(map[string]string{"GOGC": "150"})))
	for _, v := range []string{"off", "", "-1", "0", "lots"} {
		assert.Equal(t, "400", config.PluginGOGC(lookupIn(map[string]string{"GOGC": v, "GOMEMLIMIT": "1GiB"})),
			"GOGC=%q is not passed on without the limit it relies on", v)
	}
}
