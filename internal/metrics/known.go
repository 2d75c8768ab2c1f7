package metrics

import "strconv"

// The families whose label values are known before their first event
// show them at zero from then on, as Prometheus advises: a scrape finds
// every family of a fresh svc, and a rate over a series sees its first
// event instead of starting with it. Families whose values only calls can
// tell (a model, an app, a rule id, a pair of providers) appear with
// their first event.

// knownAtStart makes the series whose label values this package fixes.
func (m *Metrics) knownAtStart() {
	for _, result := range []string{"match", "mismatch", "abstain"} {
		m.ShadowEvaluations.WithLabelValues(result)
	}
	for _, outcome := range []string{"ok", "error"} {
		m.BatchWrite.WithLabelValues(outcome)
	}
	seen := map[string]bool{}
	for _, class := range refusalClasses {
		if !seen[class] {
			seen[class] = true
			m.WebRefusals.WithLabelValues(class)
		}
	}
	m.WebRefusals.WithLabelValues(Other)
	if !m.tenant {
		m.GhostSavings.WithLabelValues()
	}
}

// KnownCacheTiers makes each tier's lookups and hits.
func (m *Metrics) KnownCacheTiers(tiers ...string) {
	if m == nil {
		return
	}
	for _, tier := range tiers {
		m.tierSeries(tier)
	}
}

// KnownPolicyTargets makes the evaluations of each target by each
// decision, and its errors.
func (m *Metrics) KnownPolicyTargets(targets, decisions []string) {
	if m == nil {
		return
	}
	for _, t := range targets {
		for _, d := range decisions {
			m.PolicyEvaluations.WithLabelValues(t, d)
		}
		m.PolicyErrors.WithLabelValues(t)
	}
}

// KnownJobType makes a job type's failures, final or not.
func (m *Metrics) KnownJobType(typ string) {
	if m == nil {
		return
	}
	for _, final := range []bool{false, true} {
		m.JobFailures.WithLabelValues(typ, strconv.FormatBool(final))
	}
}

// KnownPlugin makes a plugin's restarts.
func (m *Metrics) KnownPlugin(plugin string) {
	if m != nil {
		m.PluginRestarts.WithLabelValues(plugin)
	}
}

// KnownArtifactTypes makes each artifact type's serves.
func (m *Metrics) KnownArtifactTypes(types ...string) {
	if m == nil {
		return
	}
	for _, t := range types {
		m.ArtifactServes.WithLabelValues(t)
	}
}
