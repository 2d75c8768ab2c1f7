package pricing_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/pricing"
)

func TestCost(t *testing.T) {
	tbl := pricing.New(pricing.Defaults)
	usd, ok := tbl.Cost("gpt-4o-mini", 1_000_000, 1_000_000)
	require.True(t, ok)
	assert.InDelta(t, 0.75, usd, 1e-12)

	usd, ok = tbl.Cost("gpt-4o-2024-08-06", 1000, 0)
	require.True(t, ok, "a dated variant uses its family's price")
	assert.InDelta(t, 0.0025, usd, 1e-12)

	_, ok = tbl.Cost("gpt-4o-mini-2024-07-18", 1, 1)
	assert.True(t, ok)
	p, _ := tbl.Lookup("gpt-4o-mini-2024-07-18")
	assert.InDelta(t, 0.15, p.Input, 0, "the longest prefix wins")

	usd, ok = tbl.Cost("my-local-llama", 100, 100)
	assert.False(t, ok)
	assert.Zero(t, usd)
	_, ok = tbl.Cost("gpt-4ox", 1, 1)
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
	assert.Equal(t, pricing.Price{Input: 1, Output: 2}, p)
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
		row := fmt.Sprintf("| `%s` | %.2f | %.2f |", m, p.Input, p.Output)
		if !strings.Contains(string(readme), row) {
			t.Errorf("docs/gateway.md's price table is out of date: missing %s", row)
		}
	}
}

func TestEmbeddingModelsPriceTheirInput(t *testing.T) {
	tbl := pricing.New(pricing.Defaults)
	for model, perMillion := range map[string]float64{"text-embedding-3-small": 0.02, "text-embedding-3-large": 0.13, "text-embedding-ada-002": 0.10} {
		usd, ok := tbl.Cost(model, 1_000_000, 0)
		require.True(t, ok, model)
		assert.InDelta(t, perMillion, usd, 1e-12, model)
	}
}

func TestAnthropicPrices(t *testing.T) {
	tbl := pricing.New(pricing.Defaults)
	for model, want := range map[string]pricing.Price{
		"claude-sonnet-4-5-20250929": {Input: 3, Output: 15},
		"claude-sonnet-4-5":          {Input: 3, Output: 15},
		"claude-haiku-4-5-20251001":  {Input: 1, Output: 5},
		"claude-opus-4-1-20250805":   {Input: 15, Output: 75},
		"claude-3-7-sonnet-20250219": {Input: 3, Output: 15},
		"claude-3-5-haiku-20241022":  {Input: 0.80, Output: 4},
		"claude-3-haiku-20240307":    {Input: 0.25, Output: 1.25},
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
	usd, ok := tbl.Cost("claude-haiku-4-5", 1_000_000, 1_000_000)
	require.True(t, ok)
	assert.InDelta(t, 6.0, usd, 1e-12)
}
