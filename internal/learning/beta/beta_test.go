package beta

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestQuantile(t *testing.T) {
	// Beta(1, 1) is uniform; Beta(a, 1) has CDF x^a.
	assert.InDelta(t, 0.05, Quantile(0.05, 1, 1), 1e-8)
	assert.InDelta(t, math.Pow(0.05, 1.0/20), Quantile(0.05, 20, 1), 1e-8)
	// Symmetry: I_x(a, b) = 1 − I_{1−x}(b, a).
	assert.InDelta(t, 1-RegInc(0.3, 7, 4), RegInc(0.7, 4, 7), 1e-12)
	// A known value: I_0.5(2, 3) = 11/16.
	assert.InDelta(t, 11.0/16, RegInc(0.5, 2, 3), 1e-12)

	c := Posterior(0, 0)
	assert.InDelta(t, 1.0, c.Alpha, 0)
	assert.InDelta(t, 1.0, c.Beta, 0)
	assert.InDelta(t, 0.5, c.Mean, 1e-12)
	// 40 of 40 agree: the lower bound is 0.05^(1/41) ≈ 0.930.
	assert.InDelta(t, math.Pow(0.05, 1.0/41), Posterior(40, 0).Lower, 1e-8)
	assert.Less(t, Posterior(36, 4).Lower, 0.9)
}
