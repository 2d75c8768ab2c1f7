package providers

import (
	"path"
	"slices"
	"sync"

	"github.com/svc-gateway/svc/internal/errs"
)

// maxCachedModels bounds the models whose plan is cached past the set's
// exact names: a client naming ever new models refills it, never grows it.
const maxCachedModels = 4096

// state is what the router derives from one Set: the health of each of its
// providers and the routes of the models it has seen.
type state struct {
	set    *Set
	health []*health // parallel to set.Providers
	byName map[string]int
	// any is set when the set is one provider serving every model without
	// routes (the environment's set): every model's plan is that provider.
	any bool
	// exact holds the plan of each model the set names outright (a route's
	// model, a provider's model that is no glob), made once per set.
	exact map[string]*resolved
	// seen caches the plans of other models (globs, every-model providers).
	mu   sync.RWMutex
	seen map[string]*resolved
}

// resolved is the route of one model: shared by every call for it, never
// changed once made.
type resolved struct {
	route     string
	strategy  string
	cands     []Candidate
	idx       []int // each candidate's provider index
	weights   []int // each candidate's weight, for a weighted route
	notServed []Skipped
}

func newState(set *Set, old *state) *state {
	st := &state{set: set, byName: make(map[string]int, len(set.Providers)), exact: map[string]*resolved{},
		seen: map[string]*resolved{}}
	for i, p := range set.Providers {
		st.byName[p.Name] = i
		var h *health
		if old != nil {
			if j, ok := old.byName[p.Name]; ok && old.set.Providers[j].Fingerprint == p.Fingerprint {
				h = old.health[j]
			}
		}
		if h == nil {
			h = &health{}
		}
		h.configure(p.Breaker)
		st.health = append(st.health, h)
	}
	st.any = len(set.Providers) == 1 && len(set.Providers[0].Models) == 0 && len(set.Routes) == 0
	for _, rt := range set.Routes {
		if !isGlob(rt.Model) {
			st.remember(st.exact, rt.Model)
		}
	}
	for _, p := range set.Providers {
		for _, m := range p.Models {
			if !isGlob(m) {
				st.remember(st.exact, m)
			}
		}
	}
	return st
}

func (st *state) remember(m map[string]*resolved, model string) {
	if _, ok := m[model]; !ok {
		m[model] = st.resolve(model)
	}
}

// resolve finds model's route: a route named exactly for it, else the
// first glob route that matches, else every provider that serves it, in
// file order. It returns nil when no provider serves the model.
func (st *state) resolve(model string) *resolved {
	set := st.set
	var route *Route
	for i := range set.Routes {
		if set.Routes[i].Model == model {
			route = &set.Routes[i]
			break
		}
	}
	if route == nil {
		for i := range set.Routes {
			if rt := &set.Routes[i]; isGlob(rt.Model) {
				if ok, _ := path.Match(rt.Model, model); ok {
					route = rt
					break
				}
			}
		}
	}
	r := &resolved{strategy: Ordered}
	if route != nil {
		r.route = route.Model
		if route.Strategy != "" {
			r.strategy = route.Strategy
		}
		for _, t := range route.Targets {
			i, ok := st.byName[t.Provider]
			if !ok {
				continue // the loader refuses such a route; a hand-made set may not
			}
			p := set.Providers[i]
			upstream := t.Model
			if upstream == "" {
				// As the caller named it, which a glob route's instance
				// may not serve: the loader could check only exact names.
				if !p.Serves(model) {
					continue
				}
				upstream = model
			}
			w := t.Weight
			if w <= 0 {
				w = max(p.Weight, 1)
			}
			r.cands = append(r.cands, Candidate{Provider: p.Name, Plugin: p.Plugin, Model: upstream})
			r.idx = append(r.idx, i)
			r.weights = append(r.weights, w)
		}
	} else {
		for i, p := range set.Providers {
			if p.Serves(model) {
				r.cands = append(r.cands, Candidate{Provider: p.Name, Plugin: p.Plugin, Model: model})
				r.idx = append(r.idx, i)
				r.weights = append(r.weights, max(p.Weight, 1))
			}
		}
	}
	if len(r.cands) == 0 {
		return nil
	}
	if len(set.Providers) > 1 {
		for i, p := range set.Providers {
			switch {
			case slices.Contains(r.idx, i):
			case !p.Serves(model):
				r.notServed = append(r.notServed, Skipped{Provider: p.Name, Reason: ReasonNotServed})
			case route != nil: // it serves the model, but the route sends it elsewhere
				r.notServed = append(r.notServed, Skipped{Provider: p.Name, Reason: ReasonNotRouted})
			}
		}
	}
	return r
}

// lookup returns model's route, from the set's exact names, the cache, or
// resolved now and cached.
func (st *state) lookup(model string) *resolved {
	if r, ok := st.exact[model]; ok {
		return r
	}
	st.mu.RLock()
	r, ok := st.seen[model]
	st.mu.RUnlock()
	if ok {
		return r
	}
	r = st.resolve(model)
	st.mu.Lock()
	if len(st.seen) >= maxCachedModels {
		clear(st.seen)
	}
	st.seen[model] = r
	st.mu.Unlock()
	return r
}

// Skip reasons that are fixed strings.
const (
	ReasonNotServed = "model not served"
	ReasonNotRouted = "not a target of the model's route"
	ReasonExhausted = "attempts exhausted"
)

// Plan returns the route of a call for model: its candidates in the order
// they will be tried. The error is a 404 model_not_found when no provider
// serves the model. The plan's Candidates are shared with other calls:
// read them, never change them.
func (r *Router) Plan(model string) (*Plan, error) {
	st := r.state.Load()
	p := &Plan{Model: model, Strategy: Ordered, st: st}
	if st.any {
		prov := st.set.Providers[0]
		p.one[0] = Candidate{Provider: prov.Name, Plugin: prov.Plugin, Model: model}
		p.Candidates, p.order = p.one[:], p.oneIdx[:]
		return p, nil
	}
	res := st.lookup(model)
	if res == nil {
		return nil, &errs.Error{Kind: errs.NotFound, Code: "model_not_found", Type: "invalid_request_error", Param: "model",
			Public: "no provider serves model " + model}
	}
	p.Route, p.Strategy = res.route, res.strategy
	p.Candidates, p.order = res.cands, res.idx
	p.Skipped = res.notServed[:len(res.notServed):len(res.notServed)]
	if res.strategy == Weighted && len(res.cands) > 1 {
		p.Candidates, p.order = r.shuffle(res)
	}
	return p, nil
}

// shuffle orders a weighted route's candidates at random by weight: each
// place goes to one of the candidates left with a chance proportional to
// its weight, so the first is picked by weight, and so is the fallback.
func (r *Router) shuffle(res *resolved) ([]Candidate, []int) {
	n := len(res.cands)
	cands := make([]Candidate, n)
	idx := make([]int, n)
	w := make([]int, n)
	perm := make([]int, n)
	total := 0
	for i := range perm {
		perm[i] = i
		w[i] = res.weights[i]
		total += w[i]
	}
	for k := 0; k < n; k++ {
		pick := int(r.float64() * float64(total))
		j := k
		for ; j < n-1; j++ {
			if pick < w[j] {
				break
			}
			pick -= w[j]
		}
		perm[k], perm[j] = perm[j], perm[k]
		w[k], w[j] = w[j], w[k]
		total -= w[k]
		cands[k], idx[k] = res.cands[perm[k]], res.idx[perm[k]]
	}
	return cands, idx
}
