package cache

import (
	"container/list"
	"sync"
	"time"
)

// Entry is one cached value.
type Entry struct {
	Value     []byte
	Meta      Meta
	StoredAt  time.Time
	ExpiresAt time.Time
}

// Meta is what the cache knows of the call that produced an answer, so that
// a hit can say what it saved.
type Meta struct {
	RunID            string  `json:"runId,omitempty"`
	CostUSD          float64 `json:"costUsd"`
	LatencyMS        float64 `json:"latencyMs"`
	PromptTokens     int64   `json:"promptTokens"`
	CompletionTokens int64   `json:"completionTokens"`
}

// entryOverhead approximates the bookkeeping of an entry beyond its key and
// value, so that many tiny entries still count against the bound.
const entryOverhead = 160

type memKey struct {
	tenantID string
	tier     Tier
	key      string
}

type memItem struct {
	key   memKey
	entry Entry
	size  int64
}

type tierStat struct {
	entries int
	hits    int64
}

// memory is an LRU of entries of every in-memory tier, bounded in bytes.
// An expired entry stays until it is evicted: the fallback may still serve
// it when the provider fails.
type memory struct {
	mu    sync.Mutex
	max   int64
	size  int64
	ll    *list.List // front: most recently used
	items map[memKey]*list.Element
	stats map[memKey]*tierStat // keyed by tenant and tier, key empty
}

func newMemory(maxBytes int64) *memory {
	return &memory{max: maxBytes, ll: list.New(), items: map[memKey]*list.Element{}, stats: map[memKey]*tierStat{}}
}

func (m *memory) stat(tenantID string, tier Tier) *tierStat {
	k := memKey{tenantID: tenantID, tier: tier}
	s := m.stats[k]
	if s == nil {
		s = &tierStat{}
		m.stats[k] = s
	}
	return s
}

// get returns the entry under k, expired or not.
func (m *memory) get(k memKey) (Entry, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	el, ok := m.items[k]
	if !ok {
		return Entry{}, false
	}
	m.ll.MoveToFront(el)
	return el.Value.(*memItem).entry, true
}

// hit counts a served hit of the tenant's tier.
func (m *memory) hit(tenantID string, tier Tier) {
	m.mu.Lock()
	m.stat(tenantID, tier).hits++
	m.mu.Unlock()
}

// put stores e under k, evicting the least recently used entries to stay
// within the bound. An entry larger than an eighth of the bound is not kept:
// it would push out too much.
func (m *memory) put(k memKey, e Entry) bool {
	size := int64(len(k.tenantID)+len(k.key)+len(e.Value)+len(e.Meta.RunID)) + entryOverhead
	if m.max <= 0 || size > m.max/8 {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if el, ok := m.items[k]; ok {
		m.remove(el)
	}
	m.items[k] = m.ll.PushFront(&memItem{key: k, entry: e, size: size})
	m.size += size
	m.stat(k.tenantID, k.tier).entries++
	for m.size > m.max {
		m.remove(m.ll.Back())
	}
	return true
}

func (m *memory) remove(el *list.Element) {
	it := el.Value.(*memItem)
	m.ll.Remove(el)
	delete(m.items, it.key)
	m.size -= it.size
	m.stat(it.key.tenantID, it.key.tier).entries--
}

// invalidate drops the tenant's entries of tier, or of every tier when
// tier is empty.
func (m *memory) invalidate(tenantID string, tier Tier) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for k, el := range m.items {
		if k.tenantID == tenantID && (tier == "" || k.tier == tier) {
			m.remove(el)
			n++
		}
	}
	return n
}

// invalidateAll drops every entry of every tenant.
func (m *memory) invalidateAll() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, el := range m.items {
		m.remove(el)
	}
}

// counts returns the tenant's entries and hits of tier.
func (m *memory) counts(tenantID string, tier Tier) (int, int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.stats[memKey{tenantID: tenantID, tier: tier}]
	if s == nil {
		return 0, 0
	}
	return s.entries, s.hits
}

// bytes is the space the entries take, by the cache's accounting.
func (m *memory) bytes() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.size
}
