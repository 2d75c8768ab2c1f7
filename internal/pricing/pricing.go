// Package pricing turns token usage into dollars with a per-model price
// table. The built-in table holds list prices per million tokens; an operator
// replaces or extends it with a JSON file (SVC_PRICE_FILE).
package pricing

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/svc-gateway/svc/internal/conffile"
)

// maxPriceFile bounds SVC_PRICE_FILE: some ten thousand models.
const maxPriceFile = 1 << 20

// Price is a model's price in US dollars per million tokens.
type Price struct {
	Input  float64 `json:"input"`
	Output float64 `json:"output"`
	// CachedInput prices the input tokens read from the provider's prompt
	// cache, and CacheWrite those written to it; 0 (or absent) prices them
	// as Input.
	CachedInput float64 `json:"cached_input,omitempty"`
	CacheWrite  float64 `json:"cache_write,omitempty"`
}

// Tokens is what a call is priced by. CachedPrompt and CacheWrite are the
// part of Prompt the provider read from, and wrote to, its prompt cache.
type Tokens struct {
	Prompt, Completion       int64
	CachedPrompt, CacheWrite int64
}

// Negative reports whether any of p's prices is below zero.
func (p Price) Negative() bool {
	return p.Input < 0 || p.Output < 0 || p.CachedInput < 0 || p.CacheWrite < 0
}

// or returns v, or else (v being 0, unset) the input price.
func (p Price) or(v float64) float64 {
	if v == 0 {
		return p.Input
	}
	return v
}

// Table maps model names to prices. A dated snapshot ("gpt-4o-2024-08-06")
// finds the price of the model it is a snapshot of.
type Table struct {
	prices   map[string]Price
	prefixes []string // longest first
}

// Defaults are list prices (USD per 1M tokens) of common models. OpenAI
// bills the prompt tokens its cache served at a price of their own
// (prompt_tokens_details.cached_tokens) and a cache write as plain input.
var Defaults = map[string]Price{
	"gpt-4o":        {Input: 2.50, Output: 10.00, CachedInput: 1.25},
	"gpt-4o-mini":   {Input: 0.15, Output: 0.60, CachedInput: 0.075},
	"gpt-4.1":       {Input: 2.00, Output: 8.00, CachedInput: 0.50},
	"gpt-4.1-mini":  {Input: 0.40, Output: 1.60, CachedInput: 0.10},
	"gpt-4.1-nano":  {Input: 0.10, Output: 0.40, CachedInput: 0.025},
	"gpt-4-turbo":   {Input: 10.00, Output: 30.00},
	"gpt-3.5-turbo": {Input: 0.50, Output: 1.50},
	"gpt-5":         {Input: 1.25, Output: 10.00, CachedInput: 0.125},
	"gpt-5-mini":    {Input: 0.25, Output: 2.00, CachedInput: 0.025},
	"gpt-5-nano":    {Input: 0.05, Output: 0.40, CachedInput: 0.005},
	"o1":            {Input: 15.00, Output: 60.00, CachedInput: 7.50},
	"o3":            {Input: 2.00, Output: 8.00, CachedInput: 0.50},
	"o3-mini":       {Input: 1.10, Output: 4.40, CachedInput: 0.55},
	"o4-mini":       {Input: 1.10, Output: 4.40, CachedInput: 0.275},
	// Anthropic's list prices (docs.anthropic.com, "Pricing"): a cache
	// read costs a tenth of the input price and a five-minute cache write
	// 1.25 times it (an hour-long write, twice it, is priced as a
	// five-minute one: svc reads one count of cache writes).
	// claude-opus-4 and claude-sonnet-4 are left out: a dated name extends
	// them, so claude-opus-4-5, a model of another price, would be priced
	// as them.
	"claude-opus-4-1":   {Input: 15.00, Output: 75.00, CachedInput: 1.50, CacheWrite: 18.75},
	"claude-sonnet-4-5": {Input: 3.00, Output: 15.00, CachedInput: 0.30, CacheWrite: 3.75},
	"claude-haiku-4-5":  {Input: 1.00, Output: 5.00, CachedInput: 0.10, CacheWrite: 1.25},
	"claude-3-7-sonnet": {Input: 3.00, Output: 15.00, CachedInput: 0.30, CacheWrite: 3.75},
	"claude-3-5-haiku":  {Input: 0.80, Output: 4.00, CachedInput: 0.08, CacheWrite: 1.00},
	"claude-3-haiku":    {Input: 0.25, Output: 1.25, CachedInput: 0.03, CacheWrite: 0.30},
	// Embedding models bill their input only.
	"text-embedding-3-small": {Input: 0.02},
	"text-embedding-3-large": {Input: 0.13},
	"text-embedding-ada-002": {Input: 0.10},
}

// New returns a table of prices.
func New(prices map[string]Price) *Table {
	t := &Table{prices: make(map[string]Price, len(prices))}
	for m, p := range prices {
		m = strings.ToLower(m)
		t.prices[m] = p
		t.prefixes = append(t.prefixes, m)
	}
	sort.Slice(t.prefixes, func(i, j int) bool { return len(t.prefixes[i]) > len(t.prefixes[j]) })
	return t
}

// Load returns the default table with the file at path laid over it (an
// empty path means the defaults). The file is a JSON object
// {"model": {"input": 0.15, "output": 0.6}}, where "cached_input" and
// "cache_write" may price the prompt cache's tokens; a negative price is
// refused.
func Load(path string) (*Table, error) {
	prices := make(map[string]Price, len(Defaults))
	for m, p := range Defaults {
		prices[m] = p
	}
	if path == "" {
		return New(prices), nil
	}
	b, err := conffile.Read(path, maxPriceFile)
	if err != nil {
		return nil, err
	}
	var custom map[string]Price
	if err := json.Unmarshal(b, &custom); err != nil {
		return nil, fmt.Errorf("%s: not a JSON object of {\"model\": {\"input\": n, \"output\": n}}: %w", path, err)
	}
	for m, p := range custom {
		if p.Negative() {
			return nil, fmt.Errorf("%s: model %q has a negative price", path, m)
		}
		prices[m] = p
	}
	return New(prices), nil
}

// Lookup returns model's price and whether the table knows it.
func (t *Table) Lookup(model string) (Price, bool) {
	model = strings.ToLower(model)
	if p, ok := t.prices[model]; ok {
		return p, true
	}
	for _, prefix := range t.prefixes {
		if strings.HasPrefix(model, prefix) && isSnapshot(model[len(prefix):]) {
			return t.prices[prefix], true
		}
	}
	return Price{}, false
}

// isSnapshot reports whether suffix, what a model name adds to a known
// one, names a snapshot of the same model ("-2024-08-06", "-0613",
// "@latest") rather than another model ("-pro", "-mini"), which has its
// own price.
func isSnapshot(suffix string) bool {
	if len(suffix) < 2 || suffix[0] != '-' && suffix[0] != ':' && suffix[0] != '@' {
		return false
	}
	version := suffix[1:]
	if version == "latest" {
		return true
	}
	for i := 0; i < len(version); i++ {
		if c := version[i]; (c < '0' || c > '9') && c != '-' && c != '.' {
			return false
		}
	}
	return version[0] >= '0' && version[0] <= '9'
}

// Cost prices a call; known is false when the model has no price.
func (t *Table) Cost(model string, n Tokens) (usd float64, known bool) {
	p, ok := t.Lookup(model)
	if !ok {
		return 0, false
	}
	// The cache counts are parts of the prompt: what is left of it after
	// them is plain input. Counts that claim more than the prompt are cut
	// to it rather than priced below zero.
	cached := min(max(n.CachedPrompt, 0), max(n.Prompt, 0))
	written := min(max(n.CacheWrite, 0), max(n.Prompt, 0)-cached)
	plain := max(n.Prompt, 0) - cached - written
	return (float64(plain)*p.Input + float64(cached)*p.or(p.CachedInput) + float64(written)*p.or(p.CacheWrite) +
		float64(n.Completion)*p.Output) / 1e6, true
}
