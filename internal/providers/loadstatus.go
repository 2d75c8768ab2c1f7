package providers

import (
	"sync"
	"time"

	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// loadStatus is how the last load of a router's set went.
type loadStatus struct {
	source string
	at     time.Time
	err    error
}

// loadStatuses holds each router's loadStatus. The Router's own fields
// hold its breakers; the load's outcome is kept beside it.
var loadStatuses sync.Map // *Router → loadStatus

// SetLoadStatus records how the last load (or reload) of the providers
// file went: err nil means the set it gave serves; otherwise the last good
// set serves and Status says why the new one was refused.
func (r *Router) SetLoadStatus(source string, at time.Time, err error) {
	loadStatuses.Store(r, loadStatus{source: source, at: at, err: err})
}

// Status is the current set's configuration and the last load's outcome,
// for GET /api/v1/providers: never a key.
func (r *Router) Status() Status {
	set := r.Current()
	st := Status{OK: true, Source: set.Source, Providers: []ProviderStatus{}, Routes: []RouteStatus{},
		Retries: RetriesStatus{MaxAttempts: set.Retries.MaxAttempts, BackoffMS: set.Retries.Backoff.Milliseconds(),
			MaxBackoffMS: set.Retries.MaxBackoff.Milliseconds()}}
	if v, ok := loadStatuses.Load(r); ok {
		ls := v.(loadStatus)
		st.LoadedAt = ls.at.UTC()
		if ls.err != nil {
			st.OK, st.Error = false, ls.err.Error()
		}
	}
	for _, p := range set.Providers {
		models := p.Models
		if models == nil {
			models = []string{}
		}
		st.Providers = append(st.Providers, ProviderStatus{Name: p.Name, Plugin: p.Plugin, Mode: p.Mode, BaseURL: p.BaseURL,
			Models: models, Weight: p.Weight, TimeoutMS: p.Timeout.Milliseconds(),
			Breaker: BreakerStatus{State: BreakerClosed, Failures: p.Breaker.Failures, CooldownMS: p.Breaker.Cooldown.Milliseconds()}})
	}
	for _, rt := range set.Routes {
		rs := RouteStatus{Model: rt.Model, Strategy: rt.Strategy, Targets: make([]TargetStatus, 0, len(rt.Targets))}
		for _, t := range rt.Targets {
			rs.Targets = append(rs.Targets, TargetStatus{Provider: t.Provider, Model: t.Model, Weight: t.Weight})
		}
		st.Routes = append(st.Routes, rs)
	}
	return st
}

// Single is the set of one provider that today's environment variables
// describe: every model, one attempt per call, no breaker, no timeout.
func Single(name, plugin string, impl pluginapi.Provider) *Set {
	return &Set{
		Providers: []*Provider{{Name: name, Plugin: plugin, Mode: ModePlugin, Weight: 1, Impl: impl, Fingerprint: "env:" + name}},
		Retries:   Retries{MaxAttempts: 1},
	}
}
