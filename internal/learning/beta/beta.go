// Package beta is the Beta posterior the learning loop judges artifacts
// by: a uniform prior updated with passes and fails, its mean, and its
// quantiles through the regularized incomplete beta function.
package beta

import "math"

// Confidence is an artifact's Beta posterior over the chance that it
// answers as the live model would: a uniform prior updated with every
// evaluation, Alpha = 1 + passes and Beta = 1 + fails.
type Confidence struct {
	Alpha float64 `json:"alpha"`
	Beta  float64 `json:"beta"`
	// Mean is Alpha / (Alpha + Beta), the artifact's `confidence`.
	Mean float64 `json:"confidence"`
	// Lower is the LowerQuantile quantile of the posterior: the agreement
	// the evidence supports with 95% credibility.
	Lower float64 `json:"lowerBound"`
}

// LowerQuantile is the posterior quantile promotion is judged by: the
// lower end of a one-sided 95% credible interval.
const LowerQuantile = 0.05

// Posterior returns the Beta posterior of passes and fails.
func Posterior(passes, fails int) Confidence {
	a, b := 1+float64(passes), 1+float64(fails)
	return Confidence{Alpha: a, Beta: b, Mean: a / (a + b), Lower: Quantile(LowerQuantile, a, b)}
}

// Quantile returns x with I_x(a, b) = p, the p-quantile of Beta(a, b),
// by bisection on the regularized incomplete beta function to 1e-9.
func Quantile(p, a, b float64) float64 {
	lo, hi := 0.0, 1.0
	for range 60 {
		mid := (lo + hi) / 2
		if RegInc(mid, a, b) < p {
			lo = mid
		} else {
			hi = mid
		}
		if hi-lo < 1e-9 {
			break
		}
	}
	return (lo + hi) / 2
}

// RegInc is the regularized incomplete beta function I_x(a, b),
// evaluated with its continued fraction (modified Lentz), using the
// symmetry I_x(a, b) = 1 − I_{1−x}(b, a) where the fraction converges
// slowly. Exact to about 1e-12 for the counts the gates see.
func RegInc(x, a, b float64) float64 {
	switch {
	case x <= 0:
		return 0
	case x >= 1:
		return 1
	}
	la, _ := math.Lgamma(a + b)
	lb, _ := math.Lgamma(a)
	lc, _ := math.Lgamma(b)
	front := math.Exp(la - lb - lc + a*math.Log(x) + b*math.Log1p(-x))
	if x < (a+1)/(a+b+2) {
		return front * contFrac(x, a, b) / a
	}
	return 1 - front*contFrac(1-x, b, a)/b
}

// contFrac evaluates the continued fraction of I_x(a, b) (modified Lentz).
func contFrac(x, a, b float64) float64 {
	const (
		maxIter = 300
		eps     = 1e-14
		tiny    = 1e-300
	)
	qab, qap, qam := a+b, a+1, a-1
	c, d := 1.0, 1-qab*x/qap
	if math.Abs(d) < tiny {
		d = tiny
	}
	d = 1 / d
	h := d
	for m := 1; m <= maxIter; m++ {
		fm := float64(m)
		m2 := 2 * fm
		aa := fm * (b - fm) * x / ((qam + m2) * (a + m2))
		d = 1 + aa*d
		if math.Abs(d) < tiny {
			d = tiny
		}
		c = 1 + aa/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		d = 1 / d
		h *= d * c
		aa = -(a + fm) * (qab + fm) * x / ((a + m2) * (qap + m2))
		d = 1 + aa*d
		if math.Abs(d) < tiny {
			d = tiny
		}
		c = 1 + aa/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		d = 1 / d
		del := d * c
		h *= del
		if math.Abs(del-1) < eps {
			break
		}
	}
	return h
}
