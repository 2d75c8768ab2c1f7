package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/testbin"
)

// The closed loop measures the modes in turns: each gets every turn's
// share of the phase, and its throughput and CPU come from its turns alone.
func TestClosedPhaseTakesTurns(t *testing.T) {
	if testing.Short() {
		t.Skip("runs svc twice")
	}
	up, err := startUpstream()
	require.NoError(t, err)
	defer up.close()
	defer func(turn time.Duration) { closedTurn = turn }(closedTurn)
	closedTurn = 250 * time.Millisecond
	o := options{svc: testbin.SVC(t), plugins: testbin.PluginDir(t), duration: 500 * time.Millisecond, mode: "both"}
	targets, _, err := startTargets(o, up.url)
	require.NoError(t, err)
	for _, tg := range targets {
		defer tg.svc.stop()
	}
	require.Len(t, targets, 2)
	sums := make([]summary, len(targets))
	require.NoError(t, closedPhase(o, []int{1, 2}, up.url+"/chat/completions", targets, sums))
	for i, s := range sums {
		mode := targets[i].mode
		require.Len(t, s.closed, 2, "%s: a closed loop for each number of connections", mode)
		for k, c := range s.closed {
			assert.Equal(t, k+1, c.conns, mode)
			assert.Positive(t, c.throughput, mode)
			assert.Positive(t, c.svcCPU, mode)
			assert.GreaterOrEqual(t, c.gatewayCPU, c.svcCPU, "%s: svc's CPU is part of svc's and its plugins'", mode)
			assert.Greater(t, c.machineCPU, c.gatewayCPU, "%s: the load's CPU is counted beside svc's", mode)
			if assert.Len(t, c.turnRates, 2, "%s: a rate for each of its turns", mode) {
				assert.Positive(t, c.turnRates[0])
				assert.Positive(t, c.turnRates[1])
			}
		}
	}
	require.Equal(t, modePlugin, targets[0].mode)
	plugin := sums[0].closed[0]
	assert.Greater(t, plugin.gatewayCPU, plugin.svcCPU, "plugin mode: the plugin's CPU is counted")
	assert.Greater(t, plugin.ceiling(), 1.0, "without the plugin's CPU, plugin mode's calls would cost less")
}

// The ceiling is plugin mode's CPU per request over the same without the
// plugin process's.
func TestCeiling(t *testing.T) {
	c := closedFigures{machineCPU: 500 * time.Microsecond, gatewayCPU: 350 * time.Microsecond, svcCPU: 250 * time.Microsecond}
	assert.InDelta(t, 1.25, c.ceiling(), 1e-9, "500 / (500 - 100)")
	assert.Zero(t, closedFigures{}.ceiling(), "no figures, no ceiling")
}

// Each round's ratio is of the two modes' turns in that round; a round
// without both turns, or whose plugin turn made no call, has none.
func TestTurnRatios(t *testing.T) {
	assert.Equal(t, []float64{1.5, 1.25}, turnRatios([]float64{100, 200, 50}, []float64{150, 250}))
	assert.Equal(t, []float64{2}, turnRatios([]float64{0, 100}, []float64{100, 200}), "a turn without calls has no ratio")
	assert.Empty(t, turnRatios(nil, []float64{1}))
}
