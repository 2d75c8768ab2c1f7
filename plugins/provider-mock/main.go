// Command svc-provider-mock is svc's deterministic provider plugin, used
// when no live provider key is set: demos, the learning loop and benchmarks
// run against it.
//
// Environment: MOCK_LATENCY_MS (whole milliseconds waited before each
// answer; default 0), SVC_LOG_LEVEL. stdout belongs to go-plugin's
// handshake: this program logs to stderr only, as hclog JSON.
package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/svc-gateway/svc/pkg/pluginapi"
)

func main() {
	log := pluginapi.Logger(pluginapi.ProviderName) // hclog JSON on stderr
	latency, err := latencyFromEnv(os.Getenv("MOCK_LATENCY_MS"))
	if err != nil {
		log.Error("invalid configuration", "error", err)
		os.Exit(1)
	}
	log.Debug("serving mock provider", "latency_ms", latency.Milliseconds())
	pluginapi.ServeProvider(&Mock{Latency: latency})
}

// maxLatency bounds MOCK_LATENCY_MS to something a demo could mean.
const maxLatency = 10 * time.Minute

// latencyFromEnv parses MOCK_LATENCY_MS: empty means 0; otherwise a whole,
// non-negative number of milliseconds.
func latencyFromEnv(v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, nil
	}
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil || ms < 0 || time.Duration(ms)*time.Millisecond > maxLatency {
		return 0, fmt.Errorf("MOCK_LATENCY_MS must be a whole number of milliseconds between 0 and %d, got %q",
			maxLatency.Milliseconds(), v)
	}
	return time.Duration(ms) * time.Millisecond, nil
}
