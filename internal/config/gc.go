package config

import (
	"runtime/debug"
	"strconv"
)

// GCPercent is the garbage collector's GOGC that svc and its plugins run
// with when the operator has set neither GOGC nor GOMEMLIMIT. Go's own
// default, 100, collects each time the heap has grown by what is live: svc
// keeps only a few MB live while serving and allocates some 25 KB a call,
// so at 1000 calls a second it collected about three times a second, each
// cycle taking one of a small machine's two cores for 10-20 ms, which is
// where the slowest calls waited; a plugin, whose live heap is under the
// runtime's 4 MB floor, collected three to four times a second. At 400 the
// heap grows to five times what is live before a collection: at that rate
// svc collected about 0.7 times a second and the plugin 0.5, for about
// 6 MB more peak memory in svc and 11 MB in the plugin
// (docs/operations.md § Memory and garbage collection).
const GCPercent = 400

// OwnGC says whether the operator left the garbage collector to svc: lookup
// (os.LookupEnv) finds neither GOGC nor GOMEMLIMIT.
func OwnGC(lookup func(string) (string, bool)) bool {
	_, gogc := lookup("GOGC")
	_, limit := lookup("GOMEMLIMIT")
	return !gogc && !limit
}

// SetGC sets svc's GC percent to GCPercent when the operator left the
// collector to svc (see OwnGC), and says whether it did.
func SetGC(lookup func(string) (string, bool)) bool {
	if !OwnGC(lookup) {
		return false
	}
	debug.SetGCPercent(GCPercent)
	return true
}

// PluginGOGC is the GOGC a plugin process runs with: svc's own GOGC when
// the operator set it to a percentage, else GCPercent. GOMEMLIMIT is svc's
// alone, since a limit sized for svc would not fit a plugin; so GOGC=off,
// which relies on that limit, is not passed on either: a plugin without
// the limit would then never collect.
func PluginGOGC(lookup func(string) (string, bool)) string {
	if v, ok := lookup("GOGC"); ok {
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			return strconv.Itoa(n)
		}
	}
	return strconv.Itoa(GCPercent)
}
