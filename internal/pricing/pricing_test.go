package pricing_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/pricing"
)

func TestCost(t *testing.T) {
	tbl := pricing.New(pricing.Defaults)
	usd, ok := tbl.Cost("gpt-4o-mini", pricing.Tokens{Prompt: 1_000_000, Completion: 1_000_000})
	require.True(t, ok)
	assert.InDelta(t, 0.75, usd, 1e-12)

	usd, ok = tbl.Cost("gpt-4o-2024-08-06", pricing.Tokens{Prompt: 1000, Completion: 0})
	require.True(t, ok, "a dated variant uses its family's price")
	assert.InDelta(t, 0.0025, usd, 1e-12)

	_, ok = tbl.Cost("gpt-4o-mini-2024-07-18", pricing.Tokens{Prompt: 1, Completion: 1})
	assert.True(t, ok)
	p, _ := tbl.Lookup("gpt-4o-mini-2024-07-18")
	assert.InDelta(t, 0.15, p.Input, 0, "the longest prefix wins")

	usd, ok = tbl.Cost("my-local-llama", pricing.Tokens{Prompt: 100, Completion: 100})
	assert.False(t, ok)
	assert.Zero(t, usd)
	_, ok = tbl.Cost("gpt-4ox", pricing.Tokens{Prompt: 1, Completion: 1})
	assert.False(t, ok, "a prefix must end at a separator")
	for _, snapshot := range []string{"gpt-4o-0513", "gpt-4o:2024-08-06", "gpt-4o@latest", "o3-2025.04.16"} {
		_, ok = tbl.Lookup(snapshot)
		assert.True(t, ok, "%s is a snapshot of a known model", snapshot)
	}
	for _, other := range []string{"o3-pro", "gpt-5-pro", "o1-mini", "gpt-4o-audio-preview", "gpt-4o-", "gpt-4o-latestx"} {
		_, ok = tbl.Lookup(other)
		assert.False(t, ok, "%s is another model, with its own price", other)
	}
}

func TestLoadOverrides(t *testing.T) {
	path := filepath.Join(t.TempDir(), "prices.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"gpt-4o":{"input":1,"output":2},"my-llama":{"input":0.01,"output":0.02}}`), 0o600))
	tbl, err := pricing.Load(path)
	require.NoError(t, err)
	p, ok := tbl.Lookup("gpt-4o")
	require.True(t, ok)
	assert.Equal(t, pricing.Price{Input: 1, Output: 2}, p, "a file's price replaces the default whole, its cache prices with it")
	_, ok = tbl.Lookup("my-llama")
	assert.True(t, ok)
	_, ok = tbl.Lookup("gpt-4o-mini")
	assert.True(t, ok, "defaults stay")

	require.NoError(t, os.WriteFile(path, []byte(`{"x":{"input":-1,"output":0}}`), 0o600))
	_, err = pricing.Load(path)
	assert.ErrorContains(t, err, "negative")
	require.NoError(t, os.WriteFile(path, []byte(`[]`), 0o600))
	_, err = pricing.Load(path)
	assert.Error(t, err)
}

func TestGatewayDocListsTheDefaultPrices(t *testing.T) {
	readme, err := os.ReadFile("../../docs/gateway.md")
	if err != nil {
		t.Fatal(err)
	}
	for m, p := range pricing.Defaults {
		row := fmt.Sprintf("| `%s` | %.2f | %.2f | %s | %s |", m, p.Input, p.Output, cacheColumn(p.CachedInput), cacheColumn(p.CacheWrite))
		if !strings.Contains(string(readme), row) {
			t.Errorf("docs/gateway.md's price table is out of date: missing %s", row)
		}
	}
}

// cacheColumn is how docs/gateway.md shows a cache price: "input" when
// unset.
func cacheColumn(v float64) string {
	if v == 0 {
		return "input"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

func TestPromptCacheTokensHaveTheirOwnPrices(t *testing.T) {
	tbl := pricing.New(pricing.Defaults)
	// claude-haiku-4-5: input 1, cache read 0.10, cache write 1.25, output 5
	// per million. Of 1M prompt tokens, 600k read and 300k written.
	usd, ok := tbl.Cost("claude-haiku-4-5", pricing.Tokens{Prompt: 1_000_000, Completion: 1_000_000, CachedPrompt: 600_000, CacheWrite: 300_000})
	require.True(t, ok)
	assert.InDelta(t, 0.1*1+0.6*0.10+0.3*1.25+5, usd, 1e-12)

	// gpt-4o: cached input at 1.25; no cache-write price, so a write is input.
	usd, _ = tbl.Cost("gpt-4o", pricing.Tokens{Prompt: 1_000_000, CachedPrompt: 1_000_000})
	assert.InDelta(t, 1.25, usd, 1e-12)
	usd, _ = tbl.Cost("gpt-4o", pricing.Tokens{Prompt: 1_000_000, CacheWrite: 1_000_000})
	assert.InDelta(t, 2.50, usd, 1e-12, "unset, a cache price is the input price")

	// Counts beyond the prompt are cut to it, never priced below zero.
	usd, _ = tbl.Cost("claude-haiku-4-5", pricing.Tokens{Prompt: 1_000_000, CachedPrompt: 5_000_000, CacheWrite: 5_000_000})
	assert.InDelta(t, 0.10, usd, 1e-12)
	usd, _ = tbl.Cost("claude-haiku-4-5", pricing.Tokens{Prompt: 1_000_000, CachedPrompt: -5, CacheWrite: 2_000_000})
	assert.InDelta(t, 1.25, usd, 1e-12)
}

func TestLoadReadsCachePrices(t *testing.T) {
	path := filepath.Join(t.TempDir(), "prices.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"my-llama":{"input":1,"output":2,"cached_input":0.5,"cache_write":1.5}}`), 0o600))
	tbl, err := pricing.Load(path)
	require.NoError(t, err)
	p, _ := tbl.Lookup("my-llama")
	assert.Equal(t, pricing.Price{Input: 1, Output: 2, CachedInput: 0.5, CacheWrite: 1.5}, p)
	require.NoError(t, os.WriteFile(path, []byte(`{"x":{"input":1,"output":1,"cache_write":-1}}`), 0o600))
	_, err = pricing.Load(path)
	assert.ErrorContains(t, err, "negative")
}

func TestEmbeddingModelsPriceTheirInput(t *testing.T) {
	tbl := pricing.New(pricing.Defaults)
	for model, perMillion := range map[string]float64{"text-embedding-3-small": 0.02, "text-embedding-3-large": 0.13, "text-embedding-ada-002": 0.10} {
		usd, ok := tbl.Cost(model, pricing.Tokens{Prompt: 1_000_000, Completion: 0})
		require.True(t, ok, model)
		assert.InDelta(t, perMillion, usd, 1e-12, model)
	}
}

func TestAnthropicPrices(t *testing.T) {
	tbl := pricing.New(pricing.Defaults)
	for model, want := range map[string]pricing.Price{
		"claude-sonnet-4-5-20250929": {Input: 3, Output: 15, CachedInput: 0.30, CacheWrite: 3.75},
		"claude-sonnet-4-5":          {Input: 3, Output: 15, CachedInput: 0.30, CacheWrite: 3.75},
		"claude-haiku-4-5-20251001":  {Input: 1, Output: 5, CachedInput: 0.10, CacheWrite: 1.25},
		"claude-opus-4-1-20250805":   {Input: 15, Output: 75, CachedInput: 1.50, CacheWrite: 18.75},
		"claude-3-7-sonnet-20250219": {Input: 3, Output: 15, CachedInput: 0.30, CacheWrite: 3.75},
		"claude-3-5-haiku-20241022":  {Input: 0.80, Output: 4, CachedInput: 0.08, CacheWrite: 1},
		"claude-3-haiku-20240307":    {Input: 0.25, Output: 1.25, CachedInput: 0.03, CacheWrite: 0.30},
	} {
		got, ok := tbl.Lookup(model)
		require.True(t, ok, model)
		assert.Equal(t, want, got, model)
	}
	// A model of another price is not taken for a snapshot of a listed one.
	for _, model := range []string{"claude-opus-4-5", "claude-opus-4-20250514", "claude-sonnet-4-5-haiku"} {
		_, ok := tbl.Lookup(model)
		assert.False(t, ok, model)
	}
	usd, ok := tbl.Cost("claude-haiku-4-5", pricing.Tokens{Prompt: 1_000_000, Completion: 1_000_000})
	require.True(t, ok)
	assert.InDelta(t, 6.0, usd, 1e-12)
}
